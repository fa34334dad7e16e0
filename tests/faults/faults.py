#!/usr/bin/env python3
"""faults.py -- the fault-injection suite (issue 9, item 2).

Starts a whole cluster with `mailtierctl cluster up` in a temporary
directory and, for each fault in turn, runs a steady load from
`mailtier-load run --ledger` while it injects the fault N times at random
moments:

  kill-mta, kill-shard1, kill-shard2, kill-mmp, kill-slapd
        kill -9 of that daemon, restarted at once by `mailtierctl cluster up`;
  stop-slapd
        slapd stopped (SIGSTOP) for --slapd-stop seconds (3), then SIGCONT;
  shard-down
        a shard unreachable: its popstore stopped (SIGSTOP) for --shard-down
        seconds (60), then SIGCONT; shard1 and shard2 in turn.

Each round: the pids of every daemon before; the fault; the restart or the
SIGCONT; the recovery time, from the kill (the restart follows at once) or
the SIGCONT until a probe message to a user on each shard is accepted by
the MTA and retrieved through the MMP (a fresh SMTP and POP3 session each
try); then every daemon that was not the target must still run with its old
pid (a zombie counts as dead). After a fault's rounds the load stops and
the drain begins: `mailtierctl queue flush` until `queue stats` says the
MTA's queue is empty (the sink that took the remote mail during the load
keeps running), then every load user's mailbox is emptied over POP3
(RETR, DELE, QUIT) into a drain ledger; ledger_check.py then counts over
the load's, the sink's and the drain's ledgers what was acknowledged,
lost, duplicated and corrupted (see ledger_check.py for the definitions).

A duplicate that the MTA's log explains as an at-least-once redelivery
caused by the kill (RFC 5321 6.1) -- kill-mta: the same queue id delivered
by the killed and the restarted MTA; kill-shardN: the store committed the
message and died before its 250, the MTA deferred and delivered it again --
is named as such in the table; it fails the suite unless --allow-redelivery
is given.

Prints a table: fault, rounds, messages acknowledged (and their recipient
copies), lost, duplicated, corrupted, recovery time (mean and max), and
what else went wrong. Exit status 1 when anything acknowledged was lost,
duplicated, corrupted or misdelivered, a daemon other than the target
died, a fault never recovered or the queue never drained; 0 otherwise; 77
when slapd is not installed. The directory is kept (and printed) on a
failure, or with --keep, for the daemons' logs (`mailtierctl cluster logs
--dir DIR/cluster`) and the ledgers.

    faults.py [--rounds N] [--quick] [--only FAULT,...] [--shard-down S]
              [--rate M] [--users U] [--keep]

--quick: 2 rounds each of kill-mta, kill-shard1, kill-mmp and stop-slapd
(3 s) at a low rate (what `make check` runs, through test-faults-quick.py).

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
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "harness"))

import ledger_check  # noqa: E402
import mtharness  # noqa: E402

DAEMONS = ("slapd", "shard1", "shard2", "mta", "mmp")
ALL_FAULTS = ("kill-mta", "kill-shard1", "kill-shard2", "kill-mmp", "kill-slapd",
              "stop-slapd", "shard-down")
QUICK_FAULTS = ("kill-mta", "kill-shard1", "kill-mmp", "stop-slapd")
RECOVERY_BOUND = 120.0      # s: a fault not recovered by then is a failure
DRAIN_BOUND = 180.0         # s: the MTA's queue must empty within this


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


class Cluster:
    def __init__(self, top, users, probe_users):
        self.dir = os.path.join(top, "cluster")
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


class FaultRun:
    """One fault: its load, its rounds, its drain and its check."""

    def __init__(self, suite, name, rounds):
        self.s = suite
        self.c = suite.cluster
        self.name = name
        self.rounds = rounds
        self.dir = os.path.join(suite.top, name)
        os.makedirs(self.dir)
        self.recoveries = []
        self.problems = []
        self.result = None
        self.redelivered = []

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
             "--cooldown", "5", "--step-timeout", "15", "--progress", "0",
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

    def check_others(self, before, target, rnd):
        now = self.c.pids()
        for name in DAEMONS:
            if name == target:
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
        pid = before[target]
        if kind == "kill":
            os.kill(pid, signal.SIGKILL)
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
        rec = self.s.probe.wait(t0)
        if rec is None:
            self.problems.append(f"round {rnd}: no recovery within {RECOVERY_BOUND:.0f} s")
        else:
            self.recoveries.append(rec)
        self.check_others(before, target, rnd)
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
        # Every load user's mailbox, emptied into the drain ledger.
        env = self.c.env
        n_session = 0
        with open(self.drain_ledger, "w") as out:
            out.write(f"ledger 1 drain {os.getpid()}\n")
            for k in range(1, self.s.args.users + 1):
                addr = f"user{k}@{env['DOMAIN']}"
                for attempt in range(20):
                    try:
                        p = pop_session(int(env["POP3_PORT"]), addr, f"secret{k}")
                        n_session += 1
                        session = f"drain.{n_session}"
                        n, _ = p.stat()
                        for i in range(1, n + 1):
                            mid, digest = rx_digest(p.retr(i)[1])
                            out.write(f"{time.time():.3f} pop {mid} {addr} {digest} {session}\n")
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
        self.start_load()
        time.sleep(2)
        try:
            for rnd in range(1, self.rounds + 1):
                time.sleep(random.uniform(1.0, a.gap))
                if self.name.startswith("kill-"):
                    self.one_round(rnd, self.name[5:], "kill", 0)
                elif self.name == "stop-slapd":
                    self.one_round(rnd, "slapd", "stop", a.slapd_stop)
                elif self.name == "shard-down":
                    self.one_round(rnd, f"shard{1 + (rnd - 1) % 2}", "stop", a.shard_down)
                if self.load.poll() is not None:
                    self.problems.append(f"the load generator exited early ({self.load.returncode})")
                    break
            time.sleep(2)
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
        for p in self.problems:
            log(f"  PROBLEM: {p}")
        self.classify_redeliveries()
        with open(os.path.join(self.dir, "result.json"), "w") as f:
            json.dump(dict(r, recoveries=self.recoveries, problems_other=self.problems,
                           redelivered=self.redelivered), f, indent=1)

    def classify_redeliveries(self):
        """Duplicates the MTA's log explains as an at-least-once redelivery
        (RFC 5321 6.1) caused by the fault: the message's queue id (queued
        within 3 s of the 250 the ledger records) delivered to that
        recipient by two MTA processes or stored twice under that queue id
        by the shard (kill-mta: the killed MTA's removal was not durable
        yet, or it died between the LMTP 250 and its log line), or deferred with a lost connection and then
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
                elif self.name != "kill-mta" and key in deferred:
                    how = (f"store redelivery: deferred at {', '.join(deferred[key])}, "
                           f"delivered at {', '.join(at for _, at in by)}")
                else:
                    continue
                self.redelivered.append(dict(d, queue=q, how=how))
                log(f"  at-least-once redelivery: id {d['id']} to {d['rcpt']}: queue {q} {how}")
                break

    def failed(self):
        r = self.result
        if r is None or self.problems:
            return True
        other = (r["lost"] or r["corrupted"] or r["misdelivered"] or
                 r["duplicated"] > len(self.redelivered))
        return bool(other or (self.redelivered and not self.s.args.allow_redelivery))


class Suite:
    def __init__(self, args):
        self.args = args
        self.top = tempfile.mkdtemp(prefix="mt-faults-", dir=args.tmpdir)
        # Spare users past the load's, for the probes (one on each shard;
        # the probes empty their mailboxes, so never a load user's).
        self.cluster = Cluster(self.top, args.users, 16)
        self.runs = []

    def setup(self):
        t = time.monotonic()
        self.cluster.up(first=True)
        log(f"cluster up in {self.top}/cluster (base port {self.cluster.base}) "
            f"in {time.monotonic() - t:.1f} s")
        # One probe user on each shard, outside the load's users.
        by_shard = {}
        shards = int(self.cluster.env.get("SHARDS", "2"))
        for k in range(self.args.users + 1, self.args.users + self.cluster.probe_users + 1):
            by_shard.setdefault(self.cluster.shard_of(k), k)
            if len(by_shard) == shards:
                break
        if len(by_shard) != shards:
            raise RuntimeError(f"no spare user on every shard: {by_shard}")
        self.probe = Probe(self.cluster, sorted(by_shard.values()))
        rec = self.probe.wait(time.monotonic(), 30)
        if rec is None:
            raise RuntimeError("the fresh cluster does not deliver a probe")

    def table(self):
        rows = [("fault", "rounds", "acked msgs", "acked copies", "delivered", "lost",
                 "duplicated", "corrupted", "recovery mean/max s", "other problems")]
        for r in self.runs:
            x = r.result or {}
            rec = (f"{sum(r.recoveries) / len(r.recoveries):.2f}/{max(r.recoveries):.2f}"
                   if r.recoveries else "-")
            dup = str(x.get("duplicated", "-"))
            if getattr(r, "redelivered", None):
                dup += f" ({len(r.redelivered)} redelivered)"
            rows.append((r.name, str(r.rounds), str(x.get("acknowledged", "-")),
                         str(x.get("acknowledged_copies", "-")), str(x.get("delivered", "-")),
                         str(x.get("lost", "-")), dup,
                         str(x.get("corrupted", "-")), rec,
                         str(len(r.problems) + x.get("misdelivered", 0))))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = []
        for n, row in enumerate(rows):
            lines.append("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i])
                                   for i, c in enumerate(row)))
            if n == 0:
                lines.append("  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def run(self):
        failed = False
        try:
            self.setup()
            for name in self.args.faults:
                rounds = self.args.rounds
                if name == "shard-down":
                    rounds = self.args.shard_down_rounds
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
        if failed or self.args.keep:
            log(f"files kept in {self.top} (ledgers, reports, cluster/log/)")
        else:
            shutil.rmtree(self.top, ignore_errors=True)
        return 1 if failed else 0


def parse(argv):
    ap = argparse.ArgumentParser(description="mailtier fault-injection suite")
    ap.add_argument("--rounds", type=int, default=None, help="rounds of each fault (10; quick 2)")
    ap.add_argument("--quick", action="store_true",
                    help="2 rounds of kill-mta, kill-shard1, kill-mmp, stop-slapd at a low rate")
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
    ap.add_argument("--tmpdir", default=None, help="where the suite's directory goes")
    ap.add_argument("--keep", action="store_true", help="keep the directory even on success")
    ap.add_argument("--allow-redelivery", action="store_true",
                    help="do not fail on a duplicate the MTA's log shows as an at-least-once "
                         "redelivery caused by the kill (reported all the same)")
    a = ap.parse_args(argv)
    q = a.quick
    a.rounds = a.rounds if a.rounds is not None else (2 if q else 10)
    a.rate = a.rate if a.rate is not None else (120 if q else 150)
    a.users = a.users if a.users is not None else (40 if q else 100)
    a.gap = a.gap if a.gap is not None else (5.0 if q else 6.0)
    if a.only:
        a.faults = [f.strip() for f in a.only.split(",") if f.strip()]
        bad = [f for f in a.faults if f not in ALL_FAULTS]
        if bad:
            ap.error(f"unknown fault(s): {', '.join(bad)}")
    else:
        a.faults = list(QUICK_FAULTS if q else ALL_FAULTS)
    if a.rounds < 1 or a.rate < 1 or a.users < 2 or a.gap < 1:
        ap.error("--rounds, --rate >= 1, --users >= 2, --gap >= 1")
    return a


def main(argv=None):
    a = parse(argv)
    if shutil.which("slapd", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") is None:
        print("SKIP: slapd is not installed (Debian package slapd)", file=sys.stderr)
        return 77
    t = time.monotonic()
    rc = Suite(a).run()
    log(f"{'FAIL' if rc else 'PASS'} in {time.monotonic() - t:.0f} s")
    return rc


if __name__ == "__main__":
    sys.exit(main())
