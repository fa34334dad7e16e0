#!/usr/bin/env python3
"""faults.py -- the fault-injection suite (issue 9, item 2; the hardening
issue's disk-full, slow and malicious clients, and memory checks).

Starts a whole cluster with `mailtierctl cluster up` in a temporary
directory and, for each fault in turn, runs a steady load from
`mailtier-load run --ledger` while it injects the fault:

  kill-mta, kill-shard1, kill-shard2, kill-mmp, kill-slapd
        kill -9 of that daemon at N random moments, restarted at once by
        `mailtierctl cluster up`; meanwhile IMAP sessions through the MMP
        (imap_load.py, an account on each shard) APPEND, STORE and EXPUNGE,
        and every change answered OK is checked after the rounds;
  stop-slapd
        slapd stopped (SIGSTOP) for --slapd-stop seconds (3), then SIGCONT;
  shard-down
        a shard unreachable: its popstore stopped (SIGSTOP) for --shard-down
        seconds (60), then SIGCONT; shard1 and shard2 in turn (with
        --replicas, its master of the moment: see below);
  disk-full-mta
        the MTA's queue directory lives on a small file system of the
        suite's own (an ext4 image on a loop device, else a tmpfs; mounted
        on DIR/cluster/queue before the first `cluster up`; needs root,
        skipped otherwise): a file fills it while the load runs, it stays
        full for --disk-hold seconds (20) while a fresh SMTP session every
        2 s must get a temporary answer (the MTA documents none; its code
        answers 451 4.3.0) or 250 for a message that then arrives, then it
        is freed; the MTA must keep running and take mail again by itself.
        2 rounds; then the MTA is restarted (SIGTERM, `cluster up`), so a
        message answered 451 but stored after all would be delivered and
        show in the ledger as "unacknowledged, arrived";
  slow-clients
        --slow-count (1000) connections sending one byte a second for
        --hold seconds (30): to the MTA's SMTP port, then the MMP's POP3
        port, then shard1's POP3 port (3 rounds). 1000 fill the MTA's
        max_sessions: fresh sessions then get the documented 421 4.3.2;
  no-read
        RETR of an 8 MiB message never read, 3 through the MMP and 3 from
        the stores directly, and 6 SMTP sessions pipelining EHLO until the
        MTA stops reading, never reading a reply; held --hold seconds;
  flood
        pipelined command floods for --flood seconds (20), every reply read
        and checked: SMTP EHLO, NOOP (421 after max_junk_commands) and RCPT
        (421 after max_errors), POP3 USER before login and STAT after, on
        the MMP and on a store;
  long-line
        a 10 MB command line then a normal command, on each port, before
        and after a POP3 login: an error reply, then the next command's;
  nul-8bit
        NUL and 8-bit bytes in commands, pipelined, then normal commands:
        one well-formed reply each and the session goes on;
  tls-stall
        --tls-count (100) connections to each of the implicit-TLS ports
        (submissions, the MMP's pop3s) and after STARTTLS/STLS (the MTA,
        the MMP, a store): nothing, or half a ClientHello; held --hold s.

Attack connections come from 127.1.x.y, 40 an address, so the daemons'
per-address limits and login penalties never reach the load (127.0.0.1);
see attacks.py.

Each kill/stop round: the pids of every daemon before; the fault; the
restart or the SIGCONT; the recovery time, from the kill (the restart
follows at once) or the SIGCONT until a probe message to a user on each
shard is accepted by the MTA and retrieved through the MMP (a fresh SMTP
and POP3 session each try); then every daemon that was not the target must
still run with its old pid (a zombie counts as dead). A slow/malicious
client round or a disk-full round: a fresh normal session with each daemon
(the canary: SMTP to the MTA, POP3 through the MMP and to shard1, and the
TLS ports for tls-stall) a third of the way into the attack must work or
get a documented limit answer (421 4.3.2, 451 4.3.0/452 4.3.1, -ERR
[SYS/TEMP]); a connection the daemon closed must have got a documented
reply; after the attack the recovery time (the probe) and when the load's
failed sessions stopped growing (none for 10 s, within 60 s); no daemon
may have died. Every canary message the MTA acknowledged must arrive.

Memory: each daemon's RssAnon (/proc/PID/status: heap, buffers, sessions;
not the file-backed Berkeley DB and LMDB maps, which grow as the working
set is touched) after the load's warm-up (--warm, 5 s) is the baseline;
after the fault and its recovery, the attackers' connections closed, it
must be at most max(baseline * 1.5, baseline + 16 MiB). A daemon the fault
killed is a new process and is not compared. The peak is sampled during
the fault (reported, not judged). The allocator keeps what a daemon freed,
so "after" shows what the fault made it hold at once (e.g. the MTA's
bounded read-ahead and replies of never-reading sessions, about 1.3 MiB
each) as well as what it leaked. Under AddressSanitizer (whose quarantine
keeps freed memory) the figures are reported, marked (asan), not judged.

After a fault's rounds the load stops and the drain begins: `mailtierctl
queue flush` until `queue stats` says the MTA's queue is empty (the sink
that took the remote mail during the load keeps running), then every load
user's mailbox is emptied over POP3 (RETR, DELE, QUIT) into a drain
ledger; ledger_check.py then counts over the load's, the sink's and the
drain's ledgers what was acknowledged, lost, duplicated and corrupted (see
ledger_check.py for the definitions).

A duplicate that the MTA's log explains as an at-least-once redelivery
caused by the kill (RFC 5321 6.1) -- kill-mta: the same queue id delivered
by the killed and the restarted MTA; kill-shardN: the store committed the
message and died before its 250, the MTA deferred and delivered it again --
is named as such in the table; it fails the suite unless --allow-redelivery
is given (--allow-redelivery remote: only a second copy at a remote next
hop is let pass, one in a store still fails).

Prints a table: fault, rounds, messages acknowledged (and their recipient
copies), lost, duplicated, corrupted, recovery time (mean and max), the
load's failed sessions during the attacks and after them, the longest time
until they stopped, RssAnon before/peak/after of the daemon closest to its
limit, and how many other problems. Exit status 1 when anything
acknowledged was lost, duplicated, corrupted or misdelivered, a daemon
other than the target died, a fault never recovered, the load's errors did
not stop, a canary failed, a daemon answered out of its documentation,
memory did not come back, or the queue never drained; 0 otherwise; 77 when
slapd is not installed. The directory is kept (and printed) on a failure,
or with --keep, for the daemons' logs (`mailtierctl cluster logs --dir
DIR/cluster`), the ledgers and each fault's result.json.

    faults.py [--rounds N] [--quick] [--only FAULT,...] [--shard-down S]
              [--rate M] [--users U] [--hold S] [--slow-count N] [--keep] ...

--quick: 2 rounds each of kill-mta, kill-shard1, kill-mmp and stop-slapd
(3 s), then long-line and nul-8bit, at a low rate (what `make check` runs,
through test-faults-quick.py; about 80 s, in the ASan build too). The full
set takes about 15 minutes.

--replicas 3 (issue #38): each shard a replication group of three sites
(`mailtierctl cluster up --replicas 3`: shardN, shardN-b, shardN-c). A
shard's kill and stop faults then hit the site that is its master at that
moment (the one whose LMTP greets 220): kill-shard1 is a failover under
load, and shard-down a master cut off (SIGSTOP) while another is elected;
when it comes back Berkeley DB 5.3 demotes both masters (DUPMASTER), both
exit 75 and the group elects again. `cluster up` restarts the sites that
exited, as systemd would, and they rejoin as replicas. Only the kill and stop
faults run replicated (the attacks and the disk-full fault aim at one
site's ports); test-faults-replicated.py runs kill-shard1, kill-mta and
kill-mmp this way in `make check`.

Binaries come from $MT_BUILDDIR (default: build/ under the source tree).
Trust boundary: test code; the daemons are not trusted to behave, so every
wait has a bound.
"""

import argparse
import datetime
import hashlib
import json
import os
import poplib
import random
import re
import shutil
import signal
import smtplib
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "harness"))

import attacks  # noqa: E402
import imap_load  # noqa: E402
import ledger_check  # noqa: E402
import mtharness  # noqa: E402

DAEMONS = ("slapd", "shard1", "shard2", "mta", "mmp")
SITE_SUFFIXES = ("", "-b", "-c", "-d", "-e")


def daemons_for(replicas):
    """The cluster's daemons: with replicas, every site of each shard."""
    if replicas <= 1:
        return DAEMONS
    sites = [f"shard{n}{SITE_SUFFIXES[r]}" for n in (1, 2) for r in range(replicas)]
    return ("slapd", *sites, "mta", "mmp")


KILL_FAULTS = ("kill-mta", "kill-shard1", "kill-shard2", "kill-mmp", "kill-slapd",
               "stop-slapd", "shard-down")
ATTACK_FAULTS = ("slow-clients", "no-read", "flood", "long-line", "nul-8bit", "tls-stall")
ALL_FAULTS = KILL_FAULTS + ("disk-full-mta",) + ATTACK_FAULTS
QUICK_FAULTS = ("kill-mta", "kill-shard1", "kill-mmp", "stop-slapd", "long-line", "nul-8bit")
RECOVERY_BOUND = 120.0      # s: a fault not recovered by then is a failure
DRAIN_BOUND = 180.0         # s: the MTA's queue must empty within this
ERROR_QUIET = 10.0          # s: the load's error rate has recovered when its count
                            # of failed sessions has not grown for this long ...
ERROR_BOUND = 60.0          # s: ... within this long after the fault ended
LOAD_LAG = 1.2              # s: the load's progress line (every second) lags this
                            # much at most: failures shown by then count as during
# Memory back to baseline: each daemon's anonymous RSS (RssAnon: heap,
# buffers, sessions; not the file-backed Berkeley DB and LMDB maps, which
# grow as the working set is touched) after the fault and its recovery,
# the attackers' connections closed, must be at most
# max(before * RSS_FACTOR, before + RSS_SLACK), "before" measured after the
# load's warm-up. A killed daemon is a new process: it is not compared.
RSS_FACTOR = 1.5
RSS_SLACK = 16 << 20
SPARE_USERS = 48            # users past the load's: probes, canaries, attackers
BIG_MESSAGE = 8 << 20       # the large message the never-reading RETRs ask for
NOREAD_SMTP = 6             # SMTP sessions pipelining without reading


def log(text):
    print(f"faults: {time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)


def builddir():
    env = os.environ.get("MT_BUILDDIR")
    if env:
        return os.path.abspath(env)
    return os.path.abspath(os.path.join(HERE, "..", "..", "build"))


def binary(rel):
    path = os.path.join(builddir(), rel)
    if not os.access(path, os.X_OK):
        raise SystemExit(f"faults: {path} not found (build first, or set MT_BUILDDIR)")
    return path


def alive(pid):
    """The process exists and is not a zombie (nothing reaps the detached
    daemons in some containers, so a killed one stays as a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def rx_digest(lines):
    """(id, digest) of a retrieved message as loadgen/ledger.h defines it:
    the leading Return-Path/Received fields (and their continuation lines)
    skipped, every other line digested with CRLF."""
    h = hashlib.sha256()
    in_trace, in_headers, mid = True, True, None
    for line in lines:
        if in_trace:
            low = line[:12].lower()
            if line[:1] in (b" ", b"\t") or low.startswith(b"return-path:") or \
               low.startswith(b"received:"):
                continue
            in_trace = False
        if in_headers:
            if line == b"":
                in_headers = False
            elif mid is None and line[:19].lower() == b"x-mailtier-load-id:":
                mid = line[19:].strip(b" \t").decode("ascii", "replace")
        h.update(line + b"\r\n")
    return mid or "-", h.hexdigest()


def rx_bounces(lines):
    """[(id, rcpt)] a retrieved message reports as failed: in a delivery
    report (RFC 3464), each Final-Recipient whose Action is failed, with
    the X-Mailtier-Load-Id of the quoted original. A postmaster's copy of
    an undeliverable report holds the report whole, so its inner fields
    count too. Any other message: []."""
    mid, rcpts, final = None, [], None
    for line in lines:
        low = line.lower()
        if mid is None and low.startswith(b"x-mailtier-load-id:"):
            mid = line[19:].strip(b" \t").decode("ascii", "replace")
        elif low.startswith(b"final-recipient:"):
            value = line.split(b":", 1)[1].strip()
            final = value.split(b";", 1)[-1].strip().decode("utf-8", "replace").lower()
        elif low.startswith(b"action:") and final is not None:
            if line.split(b":", 1)[1].strip().lower() == b"failed":
                rcpts.append(final)
            final = None
    return [(mid, r) for r in rcpts] if mid is not None else []


def rss(pid):
    """(VmRSS, RssAnon) of a process in bytes, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            text = f.read()
    except OSError:
        return None
    vals = {}
    for key in ("VmRSS", "RssAnon"):
        m = re.search(rf"^{key}:\s*(\d+) kB", text, re.M)
        if m is None:
            return None
        vals[key] = int(m.group(1)) << 10
    return vals["VmRSS"], vals["RssAnon"]


def mib(n):
    return f"{n / (1 << 20):.1f}"


class LoadWatch:
    """The load generator's progress line (--progress 1, in load.out): its
    failed sessions so far (connect, protocol, rejected, timeout and
    disconnect errors)."""

    PAT = re.compile(rb"errors [0-9.]+% \(conn (\d+) proto (\d+) rej (\d+) "
                     rb"timeout (\d+) disc (\d+)\)")

    def __init__(self, path):
        self.path = path
        self.last = 0

    def failures(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 8192))
                tail = f.read()
        except OSError:
            return self.last
        found = self.PAT.findall(tail)
        if found:
            self.last = sum(int(x) for x in found[-1])
        return self.last

    def failures_at(self, t):
        """The failures the progress line shows at monotonic time t (it is
        printed every second, so a failure shows up to a second late)."""
        left = t - time.monotonic()
        if left > 0:
            time.sleep(left)
        return self.failures()

    def wait_quiet(self, since, n, quiet, bound=ERROR_BOUND):
        """Seconds from `since` until the last failure past the count n,
        once none came for `quiet` s; None when failures still came `bound`
        s after."""
        last_rise = since
        while True:
            now = time.monotonic()
            if now - last_rise >= quiet:
                return max(0.0, last_rise - since)
            if now - since > bound + quiet:
                return None
            time.sleep(0.5)
            m = self.failures()
            if m != n:
                n = m
                last_rise = time.monotonic()


def fill(path, bound=120.0):
    """Write path until its file system is full (ENOSPC); bytes written."""
    written = 0
    chunk = b"\0" * (1 << 20)
    deadline = time.monotonic() + bound
    try:
        f = open(path, "wb", buffering=0)   # unbuffered: nothing left to flush at close
    except OSError:
        return 0
    with f:
        try:
            while time.monotonic() < deadline:
                written += f.write(chunk)
        except OSError:
            pass
        # Then the last blocks, a page at a time.
        try:
            while time.monotonic() < deadline:
                written += f.write(chunk[:4096])
        except OSError:
            pass
        try:
            os.fsync(f.fileno())
        except OSError:
            pass
    return written


class QueueFS:
    """A small file system of the suite's own under the MTA's queue
    directory (DIR/cluster/queue, where `cluster up` puts [mta] queue_dir),
    mounted before the first `cluster up`, for disk-full-mta: an ext4 image
    on a loop device (the kind of file system a queue lives on), else a
    tmpfs. Needs root; without it the fault is skipped."""

    def __init__(self, top, mnt, size_mb, kind):
        self.top, self.mnt, self.size_mb, self.want = top, mnt, size_mb, kind
        self.kind = None
        self.image = os.path.join(top, "queue-fs.img")

    def mount(self):
        """None when mounted, else why not."""
        os.makedirs(self.mnt, exist_ok=True)
        if os.geteuid() != 0:
            return "mounting a file system needs root"
        why = []
        for kind in ("ext4", "tmpfs") if self.want == "auto" else (self.want,):
            if kind == "ext4":
                if shutil.which("mkfs.ext4", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") is None:
                    why.append("no mkfs.ext4")
                    continue
                with open(self.image, "wb") as f:
                    f.truncate(self.size_mb << 20)
                r = subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", self.image],
                                   capture_output=True, text=True)
                if r.returncode == 0:
                    r = subprocess.run(["mount", "-o", "loop", self.image, self.mnt],
                                       capture_output=True, text=True)
                if r.returncode != 0:
                    why.append(f"ext4 on a loop device: {r.stderr.strip()}")
                    continue
            else:
                r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size_mb}m,mode=0700",
                                    "tmpfs", self.mnt], capture_output=True, text=True)
                if r.returncode != 0:
                    why.append(f"tmpfs: {r.stderr.strip()}")
                    continue
            self.kind = kind
            lf = os.path.join(self.mnt, "lost+found")
            if os.path.isdir(lf):
                os.rmdir(lf)
            os.chmod(self.mnt, 0o700)
            return None
        return "; ".join(why)

    def free(self):
        st = os.statvfs(self.mnt)
        return st.f_bavail * st.f_frsize

    def umount(self):
        if self.kind is None:
            return
        for _ in range(10):
            if subprocess.run(["umount", self.mnt], capture_output=True).returncode == 0:
                break
            time.sleep(0.5)
        else:
            subprocess.run(["umount", "-l", self.mnt], capture_output=True)
        self.kind = None
        try:
            os.unlink(self.image)
        except OSError:
            pass


class Cluster:
    def __init__(self, top, users, probe_users, replicas=1):
        self.dir = os.path.join(top, "cluster")
        self.replicas = replicas
        self.users = users
        self.base = mtharness.free_port_block(16)
        self.ctl_bin = binary("ctl/mailtierctl")
        self.env = {}
        self.probe_users = probe_users

    def ctl(self, *args, conf=False, timeout=120, check=True):
        argv = [self.ctl_bin] + (["-c", self.env["CONF"]] if conf else []) + [str(a) for a in args]
        env = dict(os.environ, MAILTIER_DATADIR=os.environ.get(
            "MT_SRCDIR", os.path.abspath(os.path.join(HERE, "..", ".."))))
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
        if check and p.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {p.returncode}:\n{p.stdout}{p.stderr}")
        return p

    def up(self, first=False):
        args = ["cluster", "up", "--dir", self.dir]
        if first:
            args += ["--base-port", self.base, "--users", self.users + self.probe_users]
            if self.replicas > 1:
                args += ["--replicas", self.replicas]
        p = self.ctl(*args, check=False)
        if p.returncode != 0:
            raise RuntimeError(f"cluster up failed:\n{p.stdout}{p.stderr}")
        if first:
            for line in open(os.path.join(self.dir, "endpoints.env")):
                k, _, v = line.strip().partition("=")
                if k and not k.startswith("#"):
                    self.env[k] = v
        return p

    def down(self):
        self.ctl("cluster", "down", "--dir", self.dir, check=False)

    def pid_file(self, name):
        if name == "slapd":
            return os.path.join(self.dir, "directory", "slapd.pid")
        return os.path.join(self.dir, "run", f"{name}.pid")

    def pids(self):
        out = {}
        for name in DAEMONS:
            try:
                out[name] = int(open(self.pid_file(name)).read().split()[0])
            except (OSError, ValueError, IndexError):
                out[name] = None
        return out

    def site_lmtp_port(self, site):
        key = site.upper().replace("-", "_") + "_LMTP_PORT"
        return int(self.env[key])

    def master_of(self, shard, bound=60.0):
        """The site of a replicated shard whose LMTP greets 220 (its
        master), waiting up to bound for one."""
        sites = [f"{shard}{SITE_SUFFIXES[r]}" for r in range(self.replicas)]
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline:
            for site in sites:
                try:
                    with socket.create_connection(
                            ("127.0.0.1", self.site_lmtp_port(site)), timeout=3) as s:
                        s.settimeout(3)
                        if s.recv(512).startswith(b"220"):
                            return site
                except OSError:
                    pass
            time.sleep(0.2)
        raise RuntimeError(f"{shard}: no site greets 220 within {bound:.0f} s")

    def settle(self, shard, bound=60.0, quiet=3.0):
        """After a demotion: start again (`cluster up`) every site of shard
        that exited (a demoted master drains its sessions, up to
        drain_timeout, before it exits), until the shard has a master and
        all its sites have run for quiet seconds."""
        sites = [f"{shard}{SITE_SUFFIXES[r]}" for r in range(self.replicas)]
        deadline = time.monotonic() + bound
        since = None
        while time.monotonic() < deadline:
            pids = self.pids()
            if any(pids[s] is None or not alive(pids[s]) for s in sites):
                self.up()
                since = None
            elif since is None:
                since = time.monotonic()
            elif time.monotonic() - since >= quiet:
                self.master_of(shard)
                return
            time.sleep(0.5)
        raise RuntimeError(f"{shard}: its sites did not settle within {bound:.0f} s")

    def queue_messages(self):
        p = self.ctl("queue", "stats", conf=True, check=False, timeout=30)
        m = re.search(r"^messages:\s*(\d+)", p.stdout, re.M)
        return int(m.group(1)) if m else None

    def shard_of(self, k):
        p = self.ctl("users", "show", f"user{k}@{self.env['DOMAIN']}", conf=True)
        return re.search(r"mailHost:\s*(\S+)", p.stdout).group(1)


def pop_session(port, user, password, timeout=10):
    p = poplib.POP3("127.0.0.1", port, timeout=timeout)
    try:
        p.user(user)
        p.pass_(password)
    except Exception:
        try:
            p.close()
        except Exception:
            pass
        raise
    return p


class Probe:
    """A probe delivery to one user per shard, each try a new SMTP and
    POP3 session: the cluster has recovered when every one arrives."""

    def __init__(self, cluster, users):
        self.c = cluster
        self.users = users     # [k, ...], one per shard
        self.n = 0

    def _try_one(self, k, deadline):
        env = self.c.env
        addr = f"user{k}@{env['DOMAIN']}"
        self.n += 1
        token = f"fault-probe-{os.getpid()}-{self.n}"
        with smtplib.SMTP("127.0.0.1", int(env["SMTP_PORT"]), timeout=5) as s:
            s.sendmail(f"probe@{env['REMOTE_DOMAIN']}", [addr],
                       f"Subject: {token}\r\n\r\n{token}\r\n")
        while time.monotonic() < deadline:
            try:
                p = pop_session(int(env["POP3_PORT"]), addr, f"secret{k}", timeout=5)
                n, _ = p.stat()
                found = False
                for i in range(1, n + 1):
                    if token.encode() in b"\n".join(p.retr(i)[1]):
                        found = True
                    p.dele(i)
                p.quit()
                if found:
                    return True
            except (OSError, poplib.error_proto):
                pass
            time.sleep(0.2)
        return False

    def wait(self, since, bound=RECOVERY_BOUND):
        """Seconds from `since` (monotonic) until every probe arrived, or
        None after the bound."""
        deadline = since + bound
        pending = list(self.users)
        while pending and time.monotonic() < deadline:
            k = pending[0]
            try:
                if self._try_one(k, min(deadline, time.monotonic() + 10)):
                    pending.pop(0)
                    continue
            except (OSError, smtplib.SMTPException, poplib.error_proto):
                pass
            time.sleep(0.2)
        return None if pending else time.monotonic() - since


LIMIT_SMTP = re.compile(r"^(421 4\.3\.2|451 4\.3\.0|452 4\.3\.1)")
LIMIT_POP = re.compile(r"^-ERR \[SYS/TEMP\]")


def tls_client_context():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE     # the cluster's self-signed certificate
    return ctx


class Canary:
    """A fresh, normal client session with each daemon while a fault is on:
    "ok", a documented limit answer ("limit: REPLY": 421 4.3.2 too many
    connections, 451 4.3.0 / 452 4.3.1 the queue cannot store the message,
    -ERR [SYS/TEMP]) or "FAIL: ..." (a timeout, a reset, an undocumented
    reply). Its messages go to spare users (one on each shard), never to a
    load user."""

    def __init__(self, cluster, users_by_shard):
        self.c = cluster
        self.users = users_by_shard     # {"shard1": k, ...}
        self.n = 0
        self.accepted = []              # (token, k) answered 250

    def _smtp_error(self, e):
        code = getattr(e, "smtp_code", None)
        text = getattr(e, "smtp_error", b"")
        if isinstance(text, bytes):
            text = text.decode("latin-1")
        if isinstance(e, smtplib.SMTPRecipientsRefused):
            (code, text), = e.recipients.values()
            text = text.decode("latin-1") if isinstance(text, bytes) else text
        line = f"{code} {text}".replace("\n", " ")[:90]
        if code is not None and LIMIT_SMTP.match(line):
            return f"limit: {line}"
        return f"FAIL: {type(e).__name__}: {line}"

    def smtp(self, mode="plain"):
        env = self.c.env
        k = self.users[sorted(self.users)[0]]
        self.n += 1
        token = f"canary-{os.getpid()}-{self.n}"
        try:
            if mode == "smtps":
                with smtplib.SMTP_SSL("127.0.0.1", int(env["SUBMISSIONS_PORT"]), timeout=10,
                                      context=tls_client_context()) as s:
                    s.ehlo("canary.example")
                    if s.noop()[0] != 250:
                        return "FAIL: NOOP"
                return "ok"
            with smtplib.SMTP("127.0.0.1", int(env["SMTP_PORT"]), timeout=10) as s:
                if mode == "starttls":
                    s.starttls(context=tls_client_context())
                s.sendmail(f"canary@{env['REMOTE_DOMAIN']}", [f"user{k}@{env['DOMAIN']}"],
                           f"Subject: {token}\r\n\r\n{token}\r\n")
            self.accepted.append((token, k))
            return "ok"
        except smtplib.SMTPServerDisconnected as e:
            return f"FAIL: disconnected: {e}"
        except smtplib.SMTPException as e:
            return self._smtp_error(e)
        except (OSError, ssl.SSLError) as e:
            return f"FAIL: {type(e).__name__}: {e}"

    def pop(self, where="mmp", mode="plain"):
        env = self.c.env
        if where == "mmp":
            k = self.users[sorted(self.users)[0]]
            port = int(env["POP3S_PORT"] if mode == "pop3s" else env["POP3_PORT"])
        else:
            k = self.users[where]
            port = int(env[f"{where.upper()}_POP3_PORT"])
        try:
            if mode == "pop3s":
                p = poplib.POP3_SSL("127.0.0.1", port, timeout=10, context=tls_client_context())
            else:
                p = poplib.POP3("127.0.0.1", port, timeout=10)
            try:
                if mode == "stls":
                    p.stls(context=tls_client_context())
                p.user(f"user{k}@{env['DOMAIN']}")
                p.pass_(f"secret{k}")
                p.stat()
                p.quit()
            finally:
                p.close()
            return "ok"
        except poplib.error_proto as e:
            line = e.args[0].decode("latin-1") if isinstance(e.args[0], bytes) else str(e)
            if LIMIT_POP.match(line):
                return f"limit: {line[:90]}"
            return f"FAIL: {line[:90]}"
        except (OSError, ssl.SSLError) as e:
            return f"FAIL: {type(e).__name__}: {e}"

    def check(self, modes):
        out = {}
        for m in modes:
            if m == "smtp":
                out["mta smtp"] = self.smtp()
            elif m == "smtps":
                out["mta 465"] = self.smtp("smtps")
            elif m == "starttls":
                out["mta STARTTLS"] = self.smtp("starttls")
            elif m == "mmp":
                out["mmp pop3"] = self.pop("mmp")
            elif m == "pop3s":
                out["mmp 995"] = self.pop("mmp", "pop3s")
            elif m == "stls":
                out["mmp STLS"] = self.pop("mmp", "stls")
            elif m == "store":
                out["shard1 pop3"] = self.pop("shard1")
        return out

    def delivered(self, k, want, bound=60.0):
        """Which of the tokens `want` arrived in user k's mailbox (emptied
        through the MMP), waiting up to `bound` s for all of them; None
        when the mailbox could not be read."""
        env = self.c.env
        found = set()
        read = False
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline:
            try:
                p = pop_session(int(env["POP3_PORT"]), f"user{k}@{env['DOMAIN']}",
                                f"secret{k}", timeout=30)
                n, _ = p.stat()
                for i in range(1, n + 1):
                    for m in re.findall(rb"canary-\d+-\d+", b"\n".join(p.top(i, 0)[1])):
                        found.add(m.decode())
                    p.dele(i)
                p.quit()
                read = True
                if want <= found:
                    break
            except (OSError, poplib.error_proto):
                pass
            time.sleep(1)
        return found if read else None


class FaultRun:
    """One fault: its load, its rounds, its drain and its check."""

    def __init__(self, suite, name, rounds):
        self.s = suite
        self.c = suite.cluster
        self.name = name
        self.rounds = rounds
        self.dir = os.path.join(suite.top, name)
        n = 1
        while os.path.exists(self.dir):     # --only FAULT,FAULT runs it twice
            n += 1
            self.dir = os.path.join(suite.top, f"{name}.{n}")
        os.makedirs(self.dir)
        self.recoveries = []
        self.kill_times = []            # wall clock of each kill -9 of a round
        self.problems = []
        self.result = None
        self.redelivered = []
        self.skipped = None
        self.err_recoveries = []        # s, per round (slow/malicious clients, disk full)
        self.fails = None               # the load's failed sessions [during, after]
        self.mem = {}                   # daemon -> dict(pid, before, peak, after, limit)
        self.notes = []                 # what the daemons answered, for result.json

    def start_load(self):
        env, a = self.c.env, self.s.args
        lg = binary("loadgen/mailtier-load")
        self.sink_ledger = os.path.join(self.dir, "sink.ledger")
        self.run_ledger = os.path.join(self.dir, "run.ledger")
        self.drain_ledger = os.path.join(self.dir, "drain.ledger")
        # The sink runs on its own for the whole fault, drain included, so
        # the end of the load never cuts a relay off half-way.
        self.sink = subprocess.Popen(
            [lg, "sink", "--listen", env["SINK"], "--quiet", "--ledger", self.sink_ledger],
            stdout=open(os.path.join(self.dir, "sink.out"), "w"), stderr=subprocess.STDOUT)
        self.seed = random.randrange(1, 1 << 31)
        self.load = subprocess.Popen(
            [lg, "run", "--smtp", f"127.0.0.1:{env['SMTP_PORT']}",
             "--pop", f"127.0.0.1:{env['POP3_PORT']}",
             "--users", str(a.users), "--rate", str(a.rate),
             "--domain", env["DOMAIN"], "--remote-domain", env["REMOTE_DOMAIN"],
             "--levels", "100", "--warmup", "1", "--duration", "3600",
             "--cooldown", "5", "--step-timeout", "15", "--progress", "1",
             "--seed", str(self.seed), "--report", os.path.join(self.dir, "report"),
             "--ledger", self.run_ledger],
            stdout=open(os.path.join(self.dir, "load.out"), "w"), stderr=subprocess.STDOUT)
        log(f"{self.name}: load started (rate {a.rate}, {a.users} users, seed {self.seed})")

    def stop_load(self):
        if self.load.poll() is None:
            self.load.send_signal(signal.SIGINT)
        try:
            self.load.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.load.kill()
            self.load.wait()
            self.problems.append("the load generator did not stop on SIGINT")
        # 1: interrupted (the expected way to end this run); 2: set-up error.
        if self.load.returncode not in (0, 1):
            self.problems.append(f"the load generator exited {self.load.returncode}")

    def check_others(self, before, targets, rnd):
        """Every daemon but targets runs with its pid of before; targets
        (the one hit, and with replicas the sites a demotion restarts) run."""
        now = self.c.pids()
        targets = targets or ()
        target = targets[0] if targets else None
        for name in DAEMONS:
            if name in targets:
                if now[name] is None or not alive(now[name]):
                    self.problems.append(f"round {rnd}: {name} is not running after the restart")
                continue
            if now[name] != before[name] or not alive(before[name]):
                self.problems.append(
                    f"round {rnd}: {name} died (pid {before[name]} -> {now[name]}, "
                    f"alive: {alive(before[name])}) during {self.name} of {target}")

    def one_round(self, rnd, target, kind, seconds):
        before = self.c.pids()
        for name in DAEMONS:
            if before[name] is None or not alive(before[name]):
                self.problems.append(f"round {rnd}: {name} not running before the fault")
                self.c.up()
                before = self.c.pids()
        if self.c.replicas > 1 and target in ("shard1", "shard2"):
            target = self.c.master_of(target)
        pid = before[target]
        if kind == "kill":
            os.kill(pid, signal.SIGKILL)
            self.kill_times.append(time.time())
            t0 = time.monotonic()
            deadline = t0 + 10
            while alive(pid) and time.monotonic() < deadline:
                time.sleep(0.01)
            self.c.up()
        else:
            os.kill(pid, signal.SIGSTOP)
            time.sleep(seconds)
            os.kill(pid, signal.SIGCONT)
            t0 = time.monotonic()
            if target.startswith("shard") and self.c.replicas > 1:
                # Another site was elected meanwhile. When the old master
                # sees it, Berkeley DB 5.3 demotes both (DUPMASTER: no
                # leases, HA.md 2.4), both exit 75 and are started again
                # (as systemd would), and the group elects anew.
                deadline = t0 + 20
                while alive(pid) and time.monotonic() < deadline:
                    time.sleep(0.1)
                self.c.settle(target.split("-")[0])
        rec = self.s.probe.wait(t0)
        if rec is None:
            self.problems.append(f"round {rnd}: no recovery within {RECOVERY_BOUND:.0f} s")
        else:
            self.recoveries.append(rec)
        restarted = (target,)
        if kind == "stop" and target.startswith("shard") and self.c.replicas > 1:
            restarted = tuple(n for n in DAEMONS if n.split("-")[0] == target.split("-")[0])
        self.check_others(before, restarted, rnd)
        log(f"{self.name} round {rnd}: {kind} {target} (pid {pid})"
            f"{f' for {seconds} s' if kind == 'stop' else ''}, recovered in "
            f"{'-' if rec is None else f'{rec:.2f} s'}")

    def drain(self):
        start = time.monotonic()
        left = None
        while time.monotonic() - start < DRAIN_BOUND:
            self.c.ctl("queue", "flush", conf=True, check=False, timeout=30)
            left = self.c.queue_messages()
            if left == 0:
                break
            time.sleep(2)
        if left != 0:
            q = self.c.ctl("queue", "list", conf=True, check=False).stdout
            self.problems.append(f"the MTA queue did not drain in {DRAIN_BOUND:.0f} s "
                                 f"({left} left):\n{q}")
        # Every load user's mailbox and the postmaster's (where a report
        # that could not be returned goes), emptied into the drain ledger.
        env = self.c.env
        accounts = [(f"user{k}@{env['DOMAIN']}", f"secret{k}")
                    for k in range(1, self.s.args.users + 1)]
        pm_secret = os.path.join(self.c.dir, "postmaster.secret")
        if os.path.exists(pm_secret):
            with open(pm_secret) as f:
                accounts.append((f"postmaster@{env['DOMAIN']}", f.read().strip()))
        n_session = 0
        with open(self.drain_ledger, "w") as out:
            out.write(f"ledger 1 drain {os.getpid()}\n")
            for addr, password in accounts:
                for attempt in range(20):
                    try:
                        p = pop_session(int(env["POP3_PORT"]), addr, password)
                        n_session += 1
                        session = f"drain.{n_session}"
                        n, _ = p.stat()
                        for i in range(1, n + 1):
                            lines = p.retr(i)[1]
                            mid, digest = rx_digest(lines)
                            out.write(f"{time.time():.3f} pop {mid} {addr} {digest} {session}\n")
                            for bmid, brcpt in rx_bounces(lines):
                                out.write(f"{time.time():.3f} bounce {bmid} {brcpt}\n")
                            p.dele(i)
                        p.quit()
                        out.write(f"{time.time():.3f} commit {session}\n")
                        break
                    except (OSError, poplib.error_proto) as e:
                        if attempt == 19:
                            self.problems.append(f"drain: {addr}: {e}")
                        time.sleep(0.5)
        self.drain_s = time.monotonic() - start

    def stop_sink(self):
        self.sink.send_signal(signal.SIGTERM)
        try:
            self.sink.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.sink.kill()
            self.sink.wait()

    def run(self):
        a = self.s.args
        if self.name == "disk-full-mta" and self.s.queue_fs_why is not None:
            self.skipped = self.s.queue_fs_why
            log(f"{self.name}: SKIPPED: {self.skipped}")
            return
        if self.name == "no-read":
            self.s.provision_big(self.s.noread_users())
        self.start_load()
        self.watch = LoadWatch(os.path.join(self.dir, "load.out"))
        self.imap = None
        if self.name.startswith("kill-"):
            # IMAP changes through the MMP during the kills: every
            # acknowledged APPEND, STORE and EXPUNGE is checked after.
            dom = self.c.env["DOMAIN"]
            self.imap = imap_load.ImapLedger(
                int(self.c.env["IMAP_PORT"]),
                [(f"user{k}@{dom}", f"secret{k}") for k in self.s.imap_users.values()],
                self.seed)
            self.imap.start()
        time.sleep(a.warm)
        self.rss_baseline()
        try:
            if self.name in ATTACK_FAULTS:
                self.fails = [0, 0]
                getattr(self, "attack_" + self.name.replace("-", "_"))()
            elif self.name == "disk-full-mta":
                self.fails = [0, 0]
                self.disk_full()
            else:
                for rnd in range(1, self.rounds + 1):
                    time.sleep(random.uniform(1.0, a.gap))
                    if self.name.startswith("kill-"):
                        self.one_round(rnd, self.name[5:], "kill", 0)
                    elif self.name == "stop-slapd":
                        self.one_round(rnd, "slapd", "stop", a.slapd_stop)
                    elif self.name == "shard-down":
                        self.one_round(rnd, f"shard{1 + (rnd - 1) % 2}", "stop", a.shard_down)
                    self.sample_rss()
                    if self.load.poll() is not None:
                        break
            if self.load.poll() is not None:
                self.problems.append(f"the load generator exited early ({self.load.returncode})")
            time.sleep(2)
            self.check_imap()
            self.check_canary_delivered()
            self.rss_check()
            if self.name == "disk-full-mta":
                self.restart_mta()
        finally:
            self.stop_load()
            try:
                self.drain()
            finally:
                self.stop_sink()
        self.result = ledger_check.check_files(
            [self.run_ledger, self.sink_ledger, self.drain_ledger], details=30)
        after = self.c.pids()
        for name in DAEMONS:
            if after[name] is None or not alive(after[name]):
                self.problems.append(f"{name} is not running after the drain")
        r = self.result
        log(f"{self.name}: acknowledged {r['acknowledged']} ({r['acknowledged_copies']} copies), "
            f"delivered {r['delivered']}, lost {r['lost']}, duplicated {r['duplicated']}, "
            f"corrupted {r['corrupted']}, unacknowledged {r['unacknowledged']} "
            f"({r['unacknowledged_delivered']} arrived), drain {self.drain_s:.1f} s")
        for p in r["problems"]:
            log(f"  {p}")
        log(f"  memory, RssAnon MiB before/peak/after: {self.memory_line()}")
        for p in self.problems:
            log(f"  PROBLEM: {p}")
        self.classify_redeliveries()
        with open(os.path.join(self.dir, "result.json"), "w") as f:
            json.dump(dict(r, recoveries=self.recoveries, problems_other=self.problems,
                           redelivered=self.redelivered, error_recoveries=self.err_recoveries,
                           load_failures=self.fails, memory=self.mem, notes=self.notes),
                      f, indent=1)

    def check_imap(self):
        if self.imap is None:
            return
        self.imap.stop()
        self.problems += self.imap.check()
        if self.imap.counts["append"] == 0:
            self.problems.append("the IMAP load had no APPEND acknowledged")
        log(f"{self.name}: {self.imap.summary()}")
        self.notes.append(self.imap.summary())

    def check_canary_delivered(self):
        """Every canary message the MTA acknowledged (during an attack, on a
        full disk) arrived."""
        acc = self.s.canary.accepted
        self.s.canary.accepted = []
        for k in sorted({k for _, k in acc}):
            want = {t for t, kk in acc if kk == k}
            got = self.s.canary.delivered(k, want)
            if got is None:
                self.problems.append(f"the canary mailbox user{k} could not be read")
            elif want - got:
                self.problems.append(f"acknowledged canary messages lost: {sorted(want - got)}")

    def restart_mta(self):
        """Stop the MTA (SIGTERM: it drains and closes its queue) and start
        it again, so what its queue holds after the full disk is loaded
        anew: a message answered 451 whose transaction was stored after
        all would be delivered now (the ledger counts it as unacknowledged,
        arrived)."""
        pid = self.c.pids()["mta"]
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if alive(pid):
            self.problems.append("the MTA did not stop on SIGTERM within 30 s")
            os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)
        self.c.up()
        if self.s.probe.wait(time.monotonic()) is None:
            self.problems.append("the restarted MTA did not take mail")
        else:
            log(f"{self.name}: MTA restarted (SIGTERM, `cluster up`)")

    # Memory

    def rss_baseline(self):
        """Each daemon's RSS after the load's warm-up."""
        for name, pid in self.c.pids().items():
            v = rss(pid) if pid is not None and alive(pid) else None
            if v is not None:
                self.mem[name] = dict(pid=pid, before=v[1], vm_before=v[0], peak=v[1],
                                      after=None, vm_after=None,
                                      limit=int(max(v[1] * RSS_FACTOR, v[1] + RSS_SLACK)))

    def sample_rss(self):
        for name, pid in self.c.pids().items():
            m = self.mem.get(name)
            if m is None or pid != m["pid"]:
                continue
            v = rss(pid)
            if v is not None:
                m["peak"] = max(m["peak"], v[1])

    def rss_check(self):
        """After the fault and its recovery: every daemon that is still the
        process measured before within its limit. A daemon restarted by
        the fault (kill-*) is a new process and is not compared."""
        now = self.c.pids()
        for name, m in self.mem.items():
            if now.get(name) != m["pid"] or not alive(m["pid"]):
                m["skipped"] = "restarted"
                continue
            v = rss(m["pid"])
            if v is None:
                continue
            m["after"], m["vm_after"] = v[1], v[0]
            m["peak"] = max(m["peak"], v[1])
            if v[1] > m["limit"] and not self.s.sanitized:
                self.problems.append(
                    f"memory: {name} RssAnon {mib(m['before'])} MiB before, {mib(v[1])} MiB "
                    f"after (peak {mib(m['peak'])}), over its limit {mib(m['limit'])} MiB")

    def memory_line(self):
        return ", ".join(
            f"{name} {mib(m['before'])}/{mib(m['peak'])}/"
            f"{mib(m['after']) if m.get('after') is not None else m.get('skipped', '-')}"
            for name, m in self.mem.items())

    def worst_memory(self):
        """The compared daemon closest to (or furthest over) its limit."""
        best = None
        for name, m in self.mem.items():
            if m.get("after") is None:
                continue
            ratio = (m["after"] - m["before"]) / (m["limit"] - m["before"])
            if best is None or ratio > best[0]:
                best = (ratio, name, m)
        if best is None:
            return "-"
        _, name, m = best
        return (f"{name} {mib(m['before'])}/{mib(m['peak'])}/{mib(m['after'])}" +
                (" (asan)" if self.s.sanitized else ""))

    # Slow and malicious clients

    def targets(self):
        env = self.c.env
        return dict(
            mta=attacks.Target("mta", int(env["SMTP_PORT"]), "smtp", "mta"),
            mmp=attacks.Target("mmp", int(env["POP3_PORT"]), "pop3", "mmp"),
            store=attacks.Target("shard1", int(env["SHARD1_POP3_PORT"]), "pop3", "shard1"))

    def store_target(self, k):
        shard = self.s.shard[k]
        return attacks.Target(shard, int(self.c.env[f"{shard.upper()}_POP3_PORT"]), "pop3",
                              shard)

    def login(self, k):
        return (f"user{k}@{self.c.env['DOMAIN']}", f"secret{k}")

    def ensure_running(self, rnd):
        before = self.c.pids()
        if any(before[n] is None or not alive(before[n]) for n in DAEMONS):
            self.problems.append(f"round {rnd}: a daemon was not running before the fault: {before}")
            self.c.up()
            before = self.c.pids()
        return before

    def canary(self, rnd, modes):
        res = self.s.canary.check(modes)
        for what, r in res.items():
            if r.startswith("FAIL"):
                self.problems.append(f"round {rnd}: a fresh {what} session during the fault: {r}")
        return res

    def attack_round(self, rnd, what, begin, end, summary, hold, settle=90.0,
                     modes=("smtp", "mmp", "store")):
        """One round of an attack: begin() in a thread (it opens connections
        and returns, or runs the whole attack); `hold` s after it returned
        (or while it runs) the load goes on; a fresh session with every
        daemon (the canary) a third of the way in; then end() closes every
        attack connection. Recovery: the probe from then, and the load's
        failed sessions no longer growing."""
        before = self.ensure_running(rnd)
        f0 = self.watch.failures()
        err = []

        def body():
            try:
                begin()
            except Exception as e:  # reported, and the round goes on
                err.append(f"{type(e).__name__}: {e}")
        th = threading.Thread(target=body, daemon=True, name=self.name)
        t_begin = time.monotonic()
        th.start()
        th.join(settle)
        t_hold = time.monotonic()
        canary = None
        hard = t_hold + hold + 300
        while time.monotonic() < hard:
            self.sample_rss()
            if canary is None and time.monotonic() >= t_hold + hold / 3:
                canary = self.canary(rnd, modes)
                continue
            if time.monotonic() >= t_hold + hold and not th.is_alive():
                break
            time.sleep(1)
        if th.is_alive():
            self.problems.append(f"round {rnd}: {what}: the attack did not end in its bound")
        info = summary()
        end()
        t_end = time.monotonic()
        rec = self.s.probe.wait(t_end)
        if rec is None:
            self.problems.append(f"round {rnd}: no recovery within {RECOVERY_BOUND:.0f} s")
        else:
            self.recoveries.append(rec)
        f1 = self.watch.failures_at(t_end + LOAD_LAG)
        erec = self.watch.wait_quiet(t_end, f1, self.s.args.quiet)
        if erec is None:
            self.problems.append(f"round {rnd}: the load's sessions still failed "
                                 f"{ERROR_BOUND:.0f} s after the attack")
        else:
            self.err_recoveries.append(erec)
        f2 = self.watch.failures()
        self.fails[0] += f1 - f0
        self.fails[1] += f2 - f1
        self.check_others(before, None, rnd)
        if err:
            self.problems.append(f"round {rnd}: {what}: {err[0]}")
        for p in info.get("problems", []):
            self.problems.append(f"round {rnd}: {p}")
        self.notes.append(dict(round=rnd, what=what, seconds=round(t_end - t_begin, 1),
                               canary=canary, attack=info))
        log(f"{self.name} round {rnd}: {what}: {json.dumps(info, default=str)[:1500]}")
        log(f"{self.name} round {rnd}: canary during: {canary}; load failures "
            f"during {f1 - f0}, after {f2 - f1}; recovered in "
            f"{'-' if rec is None else f'{rec:.2f} s'}, load errors stopped after "
            f"{'-' if erec is None else f'{erec:.1f} s'}")

    def held_summary(self, held):
        def summary():
            d = held.summary()
            problems = []
            for t, v in d.items():
                if v["bad_close"]:
                    problems.append(f"{t}: connections closed after an undocumented "
                                    f"reply: {v['bad_close']}")
            return dict(targets=d, problems=problems)
        return summary

    def attack_slow_clients(self):
        a = self.s.args
        for rnd, key in enumerate(("mta", "mmp", "store"), 1):
            t = self.targets()[key]
            sc = attacks.SlowClients([t], a.slow_count)
            self.attack_round(rnd, f"{a.slow_count} clients sending a byte a second to {t}",
                              sc.start, sc.stop, self.held_summary(sc), a.hold)

    def attack_no_read(self):
        a = self.s.args
        T = self.targets()
        via_mmp, direct = self.s.noread_users()
        retr = [(T["mmp"], *self.login(k)) for k in via_mmp] + \
               [(self.store_target(k), *self.login(k)) for k in direct]
        # Each never-reading SMTP session may hold up to about 1.3 MiB of
        # the MTA's memory (its input read-ahead, 1 MiB, and replies
        # waiting, 256 KiB: mta/smtp-session.c), which the allocator keeps
        # after the session: 6 of them stay well within the memory check.
        nr = attacks.NoRead(T["mmp"], retr, T["mta"], NOREAD_SMTP, 0)

        def summary():
            d = nr.summary()
            d["still_open"] = nr.alive()
            return d
        self.attack_round(1, f"RETR of {BIG_MESSAGE >> 20} MiB never read ({len(via_mmp)} "
                          f"through the MMP, {len(direct)} from the stores), {NOREAD_SMTP} SMTP "
                          "sessions pipelining EHLO never reading", nr.start, nr.stop,
                          summary, a.hold)

    def attack_flood(self):
        a = self.s.args
        T = self.targets()
        out = attacks.Outcome()
        mmp_users = self.s.attack_users(2, exclude=self.s.noread_all())
        st_users = self.s.attack_users(2, shard="shard1",
                                       exclude=self.s.noread_all() + mmp_users)
        d = a.flood
        jobs = [lambda i=i, kind=kind: attacks.flood_one(out, T["mta"], i, d, kind)
                for i, kind in enumerate(("ehlo", "ehlo", "noop", "rcpt"))]
        jobs += [lambda i=i: attacks.flood_one(out, T["mmp"], 100 + i, d, "user")
                 for i in range(2)]
        jobs += [lambda i=i, k=k: attacks.flood_one(out, T["mmp"], 200 + i, d, "stat",
                                                    self.login(k))
                 for i, k in enumerate(mmp_users)]
        jobs += [lambda: attacks.flood_one(out, T["store"], 300, d, "user")]
        jobs += [lambda i=i, k=k: attacks.flood_one(out, T["store"], 400 + i, d, "stat",
                                                    self.login(k))
                 for i, k in enumerate(st_users)]
        self.attack_round(1, f"pipelined floods for {d:.0f} s (SMTP EHLO, NOOP, RCPT; "
                          "POP3 USER before and STAT after login, MMP and store)",
                          lambda: attacks.run_pool(jobs, len(jobs), d + 120),
                          lambda: None, out.summary, 0, settle=3)

    def attack_long_line(self):
        T = self.targets()
        out = attacks.Outcome()
        mmp_users = self.s.attack_users(2)
        st_users = self.s.attack_users(2, shard="shard1", exclude=mmp_users)
        jobs = [lambda i=i: attacks.long_line_one(out, T["mta"], i) for i in range(3)]
        jobs += [lambda i=i: attacks.long_line_one(out, T["mmp"], 100 + i) for i in range(3)]
        jobs += [lambda i=i, k=k: attacks.long_line_one(out, T["mmp"], 200 + i, self.login(k))
                 for i, k in enumerate(mmp_users)]
        jobs += [lambda i=i: attacks.long_line_one(out, T["store"], 300 + i) for i in range(3)]
        jobs += [lambda i=i, k=k: attacks.long_line_one(out, T["store"], 400 + i, self.login(k))
                 for i, k in enumerate(st_users)]
        self.attack_round(1, f"{attacks.BIG_LINE >> 20} MB command lines (3 a port, "
                          "and 2 logged in through the MMP and on the store)",
                          lambda: attacks.run_pool(jobs, len(jobs), 120),
                          lambda: None, out.summary, 0, settle=1)

    def attack_nul_8bit(self):
        T = self.targets()
        out = attacks.Outcome()
        mmp_users = self.s.attack_users(2)
        st_users = self.s.attack_users(2, shard="shard1", exclude=mmp_users)

        def logged_in(t, i, k):
            for n in range(3):      # one mailbox, one session at a time
                attacks.nul_8bit_one(out, t, i + n, self.login(k))
        jobs = [lambda i=i: attacks.nul_8bit_one(out, T["mta"], i) for i in range(10)]
        jobs += [lambda i=i: attacks.nul_8bit_one(out, T["mmp"], 100 + i) for i in range(10)]
        jobs += [lambda i=i: attacks.nul_8bit_one(out, T["store"], 200 + i) for i in range(10)]
        jobs += [lambda i=i, k=k: logged_in(T["mmp"], 300 + 10 * i, k)
                 for i, k in enumerate(mmp_users)]
        jobs += [lambda i=i, k=k: logged_in(T["store"], 400 + 10 * i, k)
                 for i, k in enumerate(st_users)]
        self.attack_round(1, "NUL and 8-bit bytes in commands (10 sessions a port, "
                          "3 logged in on 2 mailboxes through the MMP and on the store)",
                          lambda: attacks.run_pool(jobs, 16, 120),
                          lambda: None, out.summary, 0, settle=1)

    def attack_tls_stall(self):
        a = self.s.args
        env = self.c.env
        targets = [
            attacks.TlsTarget("mta 465", int(env["SUBMISSIONS_PORT"]), "smtp", "mta", False),
            attacks.TlsTarget("mmp 995", int(env["POP3S_PORT"]), "pop3", "mmp", False),
            attacks.TlsTarget("mta STARTTLS", int(env["SMTP_PORT"]), "smtp", "mta", True),
            attacks.TlsTarget("mmp STLS", int(env["POP3_PORT"]), "pop3", "mmp", True),
            attacks.TlsTarget("shard1 STLS", int(env["SHARD1_POP3_PORT"]), "pop3", "shard1",
                              True)]
        ts = attacks.TlsStall(targets, a.tls_count)
        self.attack_round(1, f"{a.tls_count} stalled TLS handshakes a port (nothing, or "
                          "half a ClientHello)", ts.start, ts.stop, self.held_summary(ts),
                          a.hold, modes=("smtp", "smtps", "starttls", "mmp", "pop3s", "stls",
                                         "store"))

    # Disk full

    def disk_full(self):
        """Fill the MTA's queue file system while the load runs, hold it full,
        free it. The MTA must answer the messages it cannot store with a
        temporary error (it documents none; its code answers 451 4.3.0),
        never 250 for one it then loses, keep running, and take mail again
        by itself once there is space."""
        a = self.s.args
        qfs = self.s.queue_fs
        mta_log = os.path.join(self.c.dir, "log", "mta.log")
        for rnd in range(1, self.rounds + 1):
            before = self.ensure_running(rnd)
            log_at = os.path.getsize(mta_log)
            f0 = self.watch.failures()
            filler = os.path.join(qfs.mnt, "filler")
            t_fill = time.monotonic()
            n = fill(filler)
            log(f"{self.name} round {rnd}: {qfs.kind} queue file system filled with "
                f"{n >> 20} MiB in {time.monotonic() - t_fill:.1f} s "
                f"({qfs.free() >> 10} KiB left)")
            answers = {}
            t_hold = time.monotonic()
            while time.monotonic() < t_hold + a.disk_hold:
                r = self.s.canary.smtp()
                answers[r] = answers.get(r, 0) + 1
                if r.startswith("FAIL"):
                    self.problems.append(f"round {rnd}: an SMTP session on a full disk: {r}")
                self.sample_rss()
                if not alive(before["mta"]):
                    break
                time.sleep(2)
            try:
                os.unlink(filler)
            except OSError:
                pass
            t0 = time.monotonic()
            rec = self.s.probe.wait(t0)
            restarted = False
            if rec is None:
                self.problems.append(f"round {rnd}: the MTA did not take mail again within "
                                     f"{RECOVERY_BOUND:.0f} s of the space coming back")
                if alive(before["mta"]):
                    os.kill(before["mta"], signal.SIGKILL)
                    time.sleep(1)
                self.c.up()
                restarted = True
            else:
                self.recoveries.append(rec)
            f1 = self.watch.failures_at(t0 + LOAD_LAG)
            erec = self.watch.wait_quiet(t0, f1, self.s.args.quiet)
            if erec is None:
                self.problems.append(f"round {rnd}: the load's sessions still failed "
                                     f"{ERROR_BOUND:.0f} s after the space came back")
            else:
                self.err_recoveries.append(erec)
            f2 = self.watch.failures()
            self.fails[0] += f1 - f0
            self.fails[1] += f2 - f1
            if not restarted:
                self.check_others(before, None, rnd)
            with open(mta_log, "rb") as f:
                f.seek(log_at)
                text = f.read().decode("utf-8", "replace")
            mlog = {k: len(re.findall(p, text)) for k, p in (
                ("queueing failed", r"queueing failed"),
                ("write failed", r"queue: write of \d+ operations failed"),
                ("log flush failed", r"log flush failed"),
                ("checkpoint failed", r"checkpoint failed"),
                ("panic", r"(?i)panic|run recovery|DB_RUNRECOVERY"))}
            if mlog["panic"]:
                self.problems.append(f"round {rnd}: the MTA's log reports a Berkeley DB panic")
            self.notes.append(dict(round=rnd, filled=n, canary=answers, mta_log=mlog))
            log(f"{self.name} round {rnd}: SMTP answers while full: {answers}; MTA log: {mlog}; "
                f"load failures during {f1 - f0}, after {f2 - f1}; recovered in "
                f"{'-' if rec is None else f'{rec:.2f} s'}")

    def classify_redeliveries(self):
        """Duplicates the MTA's log explains as an at-least-once redelivery
        (RFC 5321 6.1) caused by the fault: the message's queue id (queued
        within 3 s of the 250 the ledger records) delivered to that
        recipient by two MTA processes or stored twice under that queue id
        by the shard (kill-mta: the killed MTA's removal was not durable
        yet, or it died between the LMTP 250 and its log line; at the sink,
        which logs no queue id, the two copies straddle a kill), or deferred with a lost connection and then
        delivered (kill-shardN: the store had committed it and died before
        its 250). The two copies must be intact, and no deletion came back."""
        self.redelivered = []
        dups = self.result["duplicates"]
        if not dups or not (self.name == "kill-mta" or self.name.startswith("kill-shard")):
            return
        queued, sent, deferred = {}, {}, {}
        pat = re.compile(r"^(\S+) mailtier-mta\[(\d+)\].* queue=([0-9A-F]+) "
                         r"(?:(queued) |to=<([^>]+)> .*status=(sent|deferred))")
        try:
            with open(os.path.join(self.c.dir, "log", "mta.log"), errors="replace") as f:
                for line in f:
                    m = pat.search(line)
                    if not m:
                        continue
                    when = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%fZ")
                    t = when.replace(tzinfo=datetime.timezone.utc).timestamp()
                    q = m.group(3)
                    if m.group(4):
                        queued.setdefault(q, t)
                    elif m.group(6) == "sent":
                        sent.setdefault((q, m.group(5).lower()), []).append((m.group(2), m.group(1)))
                    else:
                        deferred.setdefault((q, m.group(5).lower()), []).append(m.group(1))
        except OSError:
            return
        # The stores log each delivery with the MTA's queue id: a killed MTA
        # may have had its LMTP 250 and died before logging "sent".
        stored = {}
        spat = re.compile(r" queue=([0-9A-F]+) lmtp delivered to=<([^>]+)>")
        for name in sorted(os.listdir(os.path.join(self.c.dir, "log"))):
            if not name.startswith("shard"):
                continue
            try:
                with open(os.path.join(self.c.dir, "log", name), errors="replace") as f:
                    for line in f:
                        m = spat.search(line)
                        if m:
                            key = (m.group(1), m.group(2).lower())
                            stored[key] = stored.get(key, 0) + 1
            except OSError:
                pass
        for d in dups:
            if d["resurrected"] or not d["intact"] or d["copies"] != 2:
                continue
            for q, t in queued.items():
                key = (q, d["rcpt"])
                if abs(t - d["sent_at"]) > 3 or key not in sent:
                    continue
                by = sent[key]
                if self.name == "kill-mta" and len({pid for pid, _ in by}) >= 2:
                    how = "MTA redelivery: delivered by " + ", ".join(
                        f"pid {pid} at {at}" for pid, at in by)
                elif self.name == "kill-mta" and stored.get(key, 0) >= 2:
                    how = ("MTA redelivery: the store took it twice, the killed "
                           "MTA died before logging its delivery; sent by " +
                           ", ".join(f"pid {pid} at {at}" for pid, at in by))
                elif self.name == "kill-mta" and any(
                        d["seen_at"][0] - 0.5 <= k <= d["seen_at"][1] + 0.5
                        for k in self.kill_times):
                    # The same at a remote next hop, which logs nothing:
                    # one copy came before a kill of the MTA, one after.
                    how = ("MTA redelivery: the killed MTA died between its delivery "
                           "and logging it (copies at " +
                           ", ".join(f"{s:.3f}" for s in d["seen_at"]) + ", a kill at " +
                           ", ".join(f"{k:.3f}" for k in self.kill_times) + "); sent by " +
                           ", ".join(f"pid {pid} at {at}" for pid, at in by))
                elif self.name != "kill-mta" and key in deferred:
                    how = (f"store redelivery: deferred at {', '.join(deferred[key])}, "
                           f"delivered at {', '.join(at for _, at in by)}")
                else:
                    continue
                self.redelivered.append(dict(d, queue=q, how=how))
                log(f"  at-least-once redelivery: id {d['id']} to {d['rcpt']}: queue {q} {how}")
                break

    def failed(self):
        if self.skipped:
            return False
        r = self.result
        if r is None or self.problems:
            return True
        other = (r["lost"] or r["corrupted"] or r["misdelivered"] or
                 r["duplicated"] > len(self.redelivered))
        allowed = self.s.args.allow_redelivery
        local = "@" + self.c.env["DOMAIN"]
        failing = [d for d in self.redelivered
                   if allowed == "none" or (allowed == "remote" and d["rcpt"].endswith(local))]
        return bool(other or failing)


class Suite:
    def __init__(self, args):
        self.args = args
        self.top = tempfile.mkdtemp(prefix="mt-faults-", dir=args.tmpdir)
        # Spare users past the load's: the probes (one on each shard; they
        # empty their mailboxes, so never a load user's), the canaries and
        # the attackers' mailboxes.
        self.cluster = Cluster(self.top, args.users, SPARE_USERS, args.replicas)
        self.runs = []
        self.queue_fs = None
        self.queue_fs_why = None
        self.big_done = set()
        # Daemons built with AddressSanitizer keep freed memory in its
        # quarantine (256 MiB by default): their RSS is reported, not
        # judged (LeakSanitizer checks that build for leaks at exit).
        with open(binary("mta/mailtier-mta"), "rb") as f:
            self.sanitized = b"__asan_init" in f.read()
        if self.sanitized:
            log("the daemons run under AddressSanitizer: memory is reported, not judged")

    def setup(self):
        if "disk-full-mta" in self.args.faults:
            self.queue_fs = QueueFS(self.top, os.path.join(self.cluster.dir, "queue"),
                                    self.args.queue_fs_mb, self.args.queue_fs)
            self.queue_fs_why = self.queue_fs.mount()
            if self.queue_fs_why is None:
                log(f"the MTA's queue is on a {self.args.queue_fs_mb} MB {self.queue_fs.kind} "
                    f"of its own ({self.queue_fs.mnt})")
            else:
                log(f"disk-full-mta will be skipped: {self.queue_fs_why}")
        t = time.monotonic()
        self.cluster.up(first=True)
        log(f"cluster up in {self.top}/cluster (base port {self.cluster.base}) "
            f"in {time.monotonic() - t:.1f} s")
        # Each spare user's shard; one probe and one canary user on each.
        shards = int(self.cluster.env.get("SHARDS", "2"))
        self.shard = {}
        for k in range(self.args.users + 1, self.args.users + SPARE_USERS + 1):
            self.shard[k] = self.cluster.shard_of(k)
        probe, canary = {}, {}
        for k, sh in self.shard.items():
            if sh not in probe:
                probe[sh] = k
            elif sh not in canary:
                canary[sh] = k
        if len(probe) != shards or len(canary) != shards:
            raise RuntimeError(f"not enough spare users on every shard: {self.shard}")
        self.spare = [k for k in self.shard if k not in probe.values() and
                      k not in canary.values()]
        # One IMAP account on each shard for the kill rounds' IMAP load.
        self.imap_users = {}
        for k in list(self.spare):
            if self.shard[k] not in self.imap_users:
                self.imap_users[self.shard[k]] = k
                self.spare.remove(k)
        self.probe = Probe(self.cluster, sorted(probe.values()))
        self.canary = Canary(self.cluster, canary)
        rec = self.probe.wait(time.monotonic(), 30)
        if rec is None:
            raise RuntimeError("the fresh cluster does not deliver a probe")

    def attack_users(self, n, shard=None, exclude=()):
        got = [k for k in self.spare if k not in exclude and
               (shard is None or self.shard[k] == shard)][:n]
        if len(got) < n:
            raise RuntimeError(f"not {n} spare users on {shard or 'any shard'}")
        return got

    def noread_users(self):
        """(through the MMP, from the store directly): the mailboxes with the
        large message, the last spare users."""
        last = list(reversed(self.spare))
        return last[:3], last[3:6]

    def noread_all(self):
        a, b = self.noread_users()
        return a + b

    def provision_big(self, groups):
        """One BIG_MESSAGE message in each of these users' mailboxes (once)."""
        env = self.cluster.env
        users = [k for g in groups for k in g if k not in self.big_done]
        if not users:
            return
        line = b"0123456789abcdefghijklmnopqrstuvwxyz" * 2 + b"\r\n"
        body = line * (BIG_MESSAGE // len(line) + 1)
        t = time.monotonic()
        for k in users:
            msg = b"Subject: big\r\n\r\n" + body
            with smtplib.SMTP("127.0.0.1", int(env["SMTP_PORT"]), timeout=60) as s:
                s.sendmail(f"big@{env['REMOTE_DOMAIN']}", [f"user{k}@{env['DOMAIN']}"], msg)
        for k in users:
            deadline = time.monotonic() + 60
            while True:
                try:
                    p = pop_session(int(env["POP3_PORT"]), f"user{k}@{env['DOMAIN']}",
                                    f"secret{k}")
                    sizes = [int(x.split()[1]) for x in p.list()[1]]
                    p.quit()
                    if sizes and sizes[0] >= BIG_MESSAGE:
                        break
                except (OSError, poplib.error_proto):
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"user{k}: the large message did not arrive")
                time.sleep(0.5)
            self.big_done.add(k)
        log(f"{BIG_MESSAGE >> 20} MiB messages in {len(users)} mailboxes in "
            f"{time.monotonic() - t:.1f} s")

    def table(self):
        rows = [("fault", "rounds", "acked msgs", "acked copies", "delivered", "lost",
                 "duplicated", "corrupted", "recovery mean/max s", "load fails during/after",
                 "errors stop s", "RssAnon MiB before/peak/after", "other problems")]
        skipped = []
        for r in self.runs:
            x = r.result or {}
            rec = (f"{sum(r.recoveries) / len(r.recoveries):.2f}/{max(r.recoveries):.2f}"
                   if r.recoveries else "-")
            dup = str(x.get("duplicated", "-"))
            if getattr(r, "redelivered", None):
                dup += f" ({len(r.redelivered)} redelivered)"
            fails = f"{r.fails[0]}/{r.fails[1]}" if r.fails else "-"
            erec = f"{max(r.err_recoveries):.1f}" if r.err_recoveries else "-"
            if r.skipped:
                skipped.append(f"{r.name}: skipped: {r.skipped}")
                continue
            rows.append((r.name, str(r.rounds), str(x.get("acknowledged", "-")),
                         str(x.get("acknowledged_copies", "-")), str(x.get("delivered", "-")),
                         str(x.get("lost", "-")), dup,
                         str(x.get("corrupted", "-")), rec, fails, erec, r.worst_memory(),
                         str(len(r.problems) + x.get("misdelivered", 0))))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = []
        for n, row in enumerate(rows):
            lines.append("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i])
                                   for i, c in enumerate(row)))
            if n == 0:
                lines.append("  ".join("-" * w for w in widths))
        return "\n".join(lines + skipped)

    def run(self):
        failed = False
        try:
            self.setup()
            for name in self.args.faults:
                rounds = self.args.rounds
                if name == "shard-down":
                    rounds = self.args.shard_down_rounds
                elif name == "disk-full-mta":
                    rounds = self.args.disk_rounds
                elif name == "slow-clients":
                    rounds = 3
                elif name in ATTACK_FAULTS:
                    rounds = 1
                r = FaultRun(self, name, rounds)
                self.runs.append(r)
                r.run()
                failed |= r.failed()
        except Exception:
            failed = True
            import traceback
            traceback.print_exc()
        finally:
            print(self.table(), flush=True)
            self.cluster.down()
            if self.queue_fs is not None:
                self.queue_fs.umount()
        if failed or self.args.keep:
            log(f"files kept in {self.top} (ledgers, reports, cluster/log/)")
        else:
            shutil.rmtree(self.top, ignore_errors=True)
        return 1 if failed else 0


def parse(argv):
    ap = argparse.ArgumentParser(description="mailtier fault-injection suite")
    ap.add_argument("--rounds", type=int, default=None,
                    help="rounds of each kill and stop-slapd fault (10; quick 2)")
    ap.add_argument("--quick", action="store_true",
                    help="2 rounds of kill-mta, kill-shard1, kill-mmp, stop-slapd, then "
                         "long-line and nul-8bit, at a low rate")
    ap.add_argument("--only", default=None, help="comma-separated faults: " + ",".join(ALL_FAULTS))
    ap.add_argument("--shard-down", type=float, default=60.0,
                    help="seconds a shard stays unreachable (60)")
    ap.add_argument("--shard-down-rounds", type=int, default=2,
                    help="rounds of shard-down, shard1 and shard2 in turn (2)")
    ap.add_argument("--slapd-stop", type=float, default=3.0, help="seconds slapd stays stopped (3)")
    ap.add_argument("--rate", type=int, default=None, help="msgs/min of the load (150; quick 120)")
    ap.add_argument("--users", type=int, default=None, help="load users (100; quick 40)")
    ap.add_argument("--gap", type=float, default=None,
                    help="at most this many seconds of load before each round (6; quick 5)")
    ap.add_argument("--warm", type=float, default=None,
                    help="seconds of load before the memory baseline and the first round "
                         "(5; quick 3)")
    ap.add_argument("--hold", type=float, default=30.0,
                    help="seconds slow, never-reading and stalled-TLS clients are held (30)")
    ap.add_argument("--slow-count", type=int, default=1000,
                    help="slow clients against each port (1000)")
    ap.add_argument("--tls-count", type=int, default=100,
                    help="stalled TLS handshakes on each port (100)")
    ap.add_argument("--flood", type=float, default=20.0, help="seconds of each flood (20)")
    ap.add_argument("--disk-hold", type=float, default=20.0,
                    help="seconds the MTA's queue file system stays full (20)")
    ap.add_argument("--disk-rounds", type=int, default=2, help="rounds of disk-full-mta (2)")
    ap.add_argument("--queue-fs", choices=("auto", "ext4", "tmpfs"), default="auto",
                    help="the MTA queue's own file system for disk-full-mta: an ext4 image "
                         "on a loop device, a tmpfs, or the first that mounts (auto)")
    ap.add_argument("--queue-fs-mb", type=int, default=384,
                    help="its size in MB (384: room for two 64 MB Berkeley DB log files "
                         "and the databases)")
    ap.add_argument("--replicas", type=int, default=1,
                    help="sites in each shard's replication group (1; 3: see the top of "
                         "this file); only the kill and stop faults then")
    ap.add_argument("--tmpdir", default=None, help="where the suite's directory goes")
    ap.add_argument("--keep", action="store_true", help="keep the directory even on success")
    ap.add_argument("--allow-redelivery", nargs="?", const="all", default="none",
                    choices=("none", "remote", "all"),
                    help="do not fail on a duplicate the MTA's log shows as an at-least-once "
                         "redelivery caused by the kill (reported all the same): remote = only "
                         "one relayed to a remote next hop (the sink), which no receiver can "
                         "rule out (RFC 5321 6.1), while a second copy in a store still fails "
                         "(the store dedupes by LHLO name + queue id); all (the bare flag) = "
                         "any; none (default) = strict")
    a = ap.parse_args(argv)
    q = a.quick
    a.rounds = a.rounds if a.rounds is not None else (2 if q else 10)
    a.rate = a.rate if a.rate is not None else (120 if q else 150)
    a.users = a.users if a.users is not None else (40 if q else 100)
    a.gap = a.gap if a.gap is not None else (5.0 if q else 6.0)
    a.warm = a.warm if a.warm is not None else (3.0 if q else 5.0)
    a.quiet = ERROR_QUIET / 2 if q else ERROR_QUIET
    if a.only:
        a.faults = [f.strip() for f in a.only.split(",") if f.strip()]
        bad = [f for f in a.faults if f not in ALL_FAULTS]
        if bad:
            ap.error(f"unknown fault(s): {', '.join(bad)}")
    else:
        a.faults = list(QUICK_FAULTS if q else ALL_FAULTS)
    if a.replicas not in (1, 3, 5):
        ap.error("--replicas is 1, 3 or 5")
    if a.replicas > 1:
        if a.only:
            bad = [f for f in a.faults if f not in KILL_FAULTS]
            if bad:
                ap.error(f"not with --replicas: {', '.join(bad)}")
        else:
            a.faults = [f for f in a.faults if f in KILL_FAULTS]
    if a.rounds < 1 or a.rate < 1 or a.users < 2 or a.gap < 1:
        ap.error("--rounds, --rate >= 1, --users >= 2, --gap >= 1")
    if a.hold < 1 or a.slow_count < 1 or a.tls_count < 1 or a.flood < 1 or \
            a.disk_hold < 1 or a.disk_rounds < 1 or a.queue_fs_mb < 64:
        ap.error("--hold, --slow-count, --tls-count, --flood, --disk-hold, --disk-rounds >= 1, "
                 "--queue-fs-mb >= 64")
    return a


def main(argv=None):
    global DAEMONS
    a = parse(argv)
    DAEMONS = daemons_for(a.replicas)
    if shutil.which("slapd", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") is None:
        print("SKIP: slapd is not installed (Debian package slapd)", file=sys.stderr)
        return 77
    # Slow clients need descriptors: 3 a connection at most (ours, and a
    # selector's), for the held ones on every port at once.
    want = 4 * max(a.slow_count, 5 * a.tls_count) + 1024
    have = attacks.raise_nofile(want)
    if have < want and any(f in ATTACK_FAULTS for f in a.faults):
        log(f"descriptor limit {have} (hard) below {want}: some attack connections "
            "will fail to open (raise `ulimit -Hn`)")
    t = time.monotonic()
    rc = Suite(a).run()
    log(f"{'FAIL' if rc else 'PASS'} in {time.monotonic() - t:.0f} s")
    return rc


if __name__ == "__main__":
    sys.exit(main())
