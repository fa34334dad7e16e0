#!/usr/bin/env python3
"""bench/mta.py -- end-to-end throughput of mailtier-mta against Postfix, in
the same run, on one machine: SMTP in -> durable queue -> LMTP to two real
mailtier-popstore shards, and SMTP relay of the remote copies to
`mailtier-load sink`, with users in a real slapd. Load: bench/mta-load.py
(the reference client's session shape and size table: 1 local + 1 remote
recipient, ~24 KB mean), open loop, at each rate of --rates for --duration
seconds, then (--closed N) N closed-loop sessions.

The two MTAs under test, one at a time, each in front of the same slapd,
the same two popstore shards (same binaries, config and ports; their data
wiped before each sweep so every sweep starts from empty stores) and the
same sink:
  mailtier   mailtier-mta, fresh queue, delivery_concurrency 16 per shard,
             remote_concurrency 20;
  postfix    Debian Postfix in its own config_directory and queue under the
             run directory (`postfix -c DIR start` / `stop`), configured from
             bench/specmail-peer/conf-tuned/postfix (= ../shared/peers-tuned;
             --postfix-variant defaults: ../shared/peers) by
             bench/mta_postfix.py: recipients checked in the same slapd
             (postfix-ldap, as the peers do), routed to the user's shard by
             its mailHost (pipemap: LDAP -> inline shard table ->
             lmtp:inet:127.0.0.1:PORT; --postfix-routing hash: a table
             written once from the directory), remote domain relayed to the
             sink, queue fsync on (Postfix's default; it cannot be turned off).
With --repeat R the sweeps alternate (mailtier, postfix, postfix, mailtier,
...), so a noisy stretch of this shared machine does not fall on one MTA only;
every step of a repetition uses the same message sequence (seed) for both.

Per step it reports the achieved msgs/min, the SMTP DATA response time
(mean and p95: final "." to 250), how late the client's sessions started
against their schedule (lag), the queue at the end of the load and how long
it took to drain, the deliveries each MTA logged, the queue's log flushes
per message (mailtier: group commit), the CPU seconds each process used
(Postfix: all its processes, user/system, and by process name), the
machine's CPU busy % and the load average.

A step HOLDS when the queue does not grow: errors <= 0.1% of the messages,
client lag p95 <= --max-lag ms, backlog at the end <= --max-backlog-s
seconds of arrivals (and at least 10 messages), drained within
--drain-bound seconds, DATA p95 <= --max-data-p95 ms, every local and
remote copy delivered (the MTA's log), nothing left. The
same bounds for both MTAs (equal QoS). A sweep stops after --stop-after
failed steps in a row. The final table gives per MTA and repetition the
highest rate that holds (achieved msgs/min, DATA mean/p95 there), the
medians over repetitions and the ratio mailtier/Postfix; mailtier's DATA
mean at Postfix's highest holding rate and at 3x it; the closed-loop step
(msgs/min, DATA mean, and for mailtier flushes per message); the CPU per
message of each MTA; and the issue's three targets (>= 3x Postfix's
msgs/min; DATA mean < 10 ms at that load; <= 0.25 flushes per message at 32
sessions).

  bench/mta.py [--rates 4000,6000,...,30000] [--duration 30] [--repeat 3]
               [--closed 32] [--only mailtier|postfix]
               [--postfix-variant tuned|defaults] [--postfix-routing ldap|hash]
               [--users 1000] [--procs 2] [--warmup 5] [--stop-after 2]
               [--max-load 3 --quiet-wait S] [--keep]
  bench/mta.py --metrics-ab [--scrape-interval 1] [--rates ...] [--repeat 3]
               (mailtier with metrics off against metrics on and /metrics
               scraped every second, alternating as above; no Postfix, no root)
  bench/mta.py --milter-ab [--rates ...] [--repeat 3]
               (mailtier without mail filters against mailtier with Debian's
               rspamd as its milter on port 25 -- rspamd's proxy worker in
               milter mode and an unbound serving the test zones, both on
               loopback, from tests/integration/filters.py --, alternating
               as above: achieved msgs/min, the MTA's own CPU per message
               and rspamd's apart; no Postfix)
  bench/mta.py --report SAVED-OUTPUT     (the summary again, from a run's output)

The comparison, as measured in bench/README.md (about 40 min):
  MT_BUILDDIR=$PWD/build-benchmta nice bench/mta.py \
      --rates 4000,6000,8000,10000,12000,15000,18000,21000,24000,27000,30000 \
      --duration 30 --repeat 3 --closed 32 --max-load 4 --quiet-wait 300

Binaries from $MT_BUILDDIR (default: ./build under the source tree).
Run as root (Postfix's master starts as root). Everything listens on
127.0.0.1 on free ports; every load and wait is bounded; every process it
starts (slapd, popstores, sink, mailtier-mta, Postfix) is stopped at the end,
also on error, Ctrl-C and SIGTERM. Measured figures: bench/README.md.
Trust boundary: a benchmark on loopback. """

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mta_postfix  # noqa: E402

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.environ.get("MT_BUILDDIR") or os.path.join(SRC, "build")
DOMAIN = "bench.test"
REMOTE = "remote.test"
HZ = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"[mta {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def binary(rel):
    path = os.path.join(BUILD, rel)
    if not os.access(path, os.X_OK):
        sys.exit(f"bench/mta: {path} not built (make {rel})")
    return path


def free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def wait_port(port, proc=None, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"port {port} did not open")


def cpu_us(pid):
    """(user s, system s) of one process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    return int(fields[11]) / HZ, int(fields[12]) / HZ


def machine_cpu():
    """(busy ticks, steal ticks, total ticks) from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (v + [0] * 8)[:8]
    return user + nice + system + irq + softirq, steal, sum(v[:8])


def log_offset(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def delivery_counts(path, offset):
    """Delivery outcomes an MTA logged since offset, by recipient kind:
    {"local_sent": n, "remote_sent": n, "local_deferred": n, ...}. Both
    mailtier-mta and Postfix log `to=<ADDR> relay=... status=WORD`."""
    out = {}
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return out
    for line in data.decode("utf-8", "replace").splitlines():
        i = line.find(" status=")
        j = line.find(" to=<")
        if i < 0 or j < 0:
            continue
        status = line[i + 8:].split(" ", 1)[0]
        kind = "local" if line[j:].split(">", 1)[0].endswith("@" + DOMAIN) else "remote"
        out[f"{kind}_{status}"] = out.get(f"{kind}_{status}", 0) + 1
    return out


def loadavg():
    return round(os.getloadavg()[0], 2)


class Bench:
    """The shared parts: slapd with the users, two popstore shards, the sink."""

    def __init__(self, a):
        self.a = a
        self.dir = tempfile.mkdtemp(prefix="mta-bench.", dir="/var/tmp")
        os.chmod(self.dir, 0o711)       # Postfix's daemons (user postfix) pass through
        self.procs = {}
        self.ctl = binary("ctl/mailtierctl")
        (self.ldap_port, self.smtp_port, self.sink_port, self.l1, self.p1,
         self.l2, self.p2, self.pf_port) = free_ports(8)
        self.conf = os.path.join(self.dir, "mailtier.conf")
        self.slapd_up = False
        self.extra_cpu = {}     # name -> () -> (user, system) seconds

    def run_ctl(self, *args, timeout=600):
        env = dict(os.environ, MAILTIER_DATADIR=SRC)
        p = subprocess.run([self.ctl, "-c", self.conf, *map(str, args)],
                           capture_output=True, text=True, timeout=timeout, env=env)
        if p.returncode != 0:
            raise RuntimeError(f"mailtierctl {' '.join(map(str, args))}: {p.stdout}{p.stderr}")
        return p.stdout

    def setup(self):
        slapd = os.path.join(self.dir, "slapd")
        env = dict(os.environ, MAILTIER_DATADIR=SRC)
        self.slapd_up = True
        subprocess.run([self.ctl, "directory", "up", "--dir", slapd, "--port",
                        str(self.ldap_port), "--domain", DOMAIN], check=True,
                       capture_output=True, env=env, timeout=120)
        with open(os.path.join(slapd, "directory.conf")) as f:
            directory = f.read().split("\n[mta]")[0]
        self.directory = {k.strip(): v.strip() for k, v in
                          (line.split("=", 1) for line in directory.splitlines()
                           if "=" in line and not line.startswith("#"))}
        secret = os.path.join(self.dir, "proxy.secret")
        with open(secret, "w") as f:
            f.write("bench-proxy\n")
        os.chmod(secret, 0o600)
        with open(self.conf, "w") as f:
            f.write(f"""[global]
user =
group =
log_level = info
drain_timeout = 10s

{directory}
[shards]
s1 = 127.0.0.1:{self.l1}, 127.0.0.1:{self.p1}
s2 = 127.0.0.1:{self.l2}, 127.0.0.1:{self.p2}

[popstore]
proxy_password_file = {secret}

[popstore.s1]
db_home = {self.dir}/store-s1
lmtp_listen = 127.0.0.1:{self.l1}
pop3_listen = 127.0.0.1:{self.p1}

[popstore.s2]
db_home = {self.dir}/store-s2
lmtp_listen = 127.0.0.1:{self.l2}
pop3_listen = 127.0.0.1:{self.p2}

[mta]
smtp_listen = 127.0.0.1:{self.smtp_port}
submission_listen =
submissions_listen =
hostname = mx.{DOMAIN}
local_domains = {DOMAIN}
mynetworks = 127.0.0.0/8
transport_map = {REMOTE}=127.0.0.1:{self.sink_port}
queue_dir = {self.dir}/queue
max_sessions = 4000
max_sessions_per_client = 4000
delivery_concurrency = {self.a.delivery_concurrency}
remote_concurrency = {self.a.remote_concurrency}
""")
        self.run_ctl("users", "bulk", "--count", self.a.users, "--domain", DOMAIN,
                     "--shards", "s1,s2")
        self.start("sink", [binary("loadgen/mailtier-load"), "sink", "--listen",
                            f"127.0.0.1:{self.sink_port}", "--quiet"], self.sink_port)

    def start(self, name, argv, port):
        log_f = open(os.path.join(self.dir, f"{name}.log"), "ab")
        p = subprocess.Popen(argv, stdout=log_f, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        log_f.close()
        self.procs[name] = p
        wait_port(port, p)

    def stop_proc(self, name):
        p = self.procs.pop(name, None)
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                log(f"{name} pid {p.pid} did not stop in 30 s: SIGKILL")
                p.kill()
                p.wait(10)

    def fresh_stores(self):
        """Stop the shards if running, wipe their data, start them again."""
        for s in ("popstore-s1", "popstore-s2"):
            self.stop_proc(s)
        for s in ("store-s1", "store-s2"):
            shutil.rmtree(os.path.join(self.dir, s), ignore_errors=True)
        pop = binary("popstore/mailtier-popstore")
        self.start("popstore-s1", [pop, "-c", self.conf, "-s", "s1", "-F"], self.l1)
        self.start("popstore-s2", [pop, "-c", self.conf, "-s", "s2", "-F"], self.l2)

    def cpu(self):
        out = {name: cpu_us(p.pid) for name, p in self.procs.items()}
        out.update({name: fn() for name, fn in self.extra_cpu.items()})
        return out

    def stop(self):
        for name in list(self.procs):
            self.stop_proc(name)
        if self.slapd_up:
            env = dict(os.environ, MAILTIER_DATADIR=SRC)
            subprocess.run([self.ctl, "directory", "down", "--dir",
                            os.path.join(self.dir, "slapd")], capture_output=True,
                           env=env, timeout=120)
            self.slapd_up = False


class Mailtier:
    name = "mailtier"

    def __init__(self, b):
        self.b = b
        self.port = b.smtp_port
        self.logfile = os.path.join(b.dir, "mta.log")

    def start(self):
        shutil.rmtree(os.path.join(self.b.dir, "queue"), ignore_errors=True)
        self.b.start("mta", [binary("mta/mailtier-mta"), "-f", "-c", self.b.conf],
                     self.port)

    def stop(self):
        self.b.stop_proc("mta")

    def stats(self):
        out = self.b.run_ctl("queue", "stats", timeout=30)
        return {k.strip(): int(v) for k, v in
                (line.split(":", 1) for line in out.splitlines() if ":" in line)}

    def queue_size(self):
        return self.stats()["messages"]

    def cpu(self):
        p = self.b.procs.get("mta")
        return cpu_us(p.pid) if p else (0.0, 0.0)

    def flush(self):
        self.b.run_ctl("queue", "flush", timeout=30)


class MailtierScraped(Mailtier):
    """mailtier-mta with metrics_listen set and /metrics fetched every
    --scrape-interval seconds while it runs, as a Prometheus would."""
    name = "mailtier+metrics"

    def __init__(self, b):
        super().__init__(b)
        self.metrics_port = free_ports(1)[0]
        self.conf = os.path.join(b.dir, "mailtier-metrics.conf")
        self.scrapes = self.scrape_errors = self.scrape_bytes = 0
        self.done = None

    def scraper(self):
        import http.client
        while not self.done.wait(self.b.a.scrape_interval):
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=5)
                c.request("GET", "/metrics")
                r = c.getresponse()
                body = r.read()
                c.close()
                if r.status != 200:
                    raise RuntimeError(f"status {r.status}")
                self.scrapes += 1
                self.scrape_bytes += len(body)
            except Exception:
                self.scrape_errors += 1

    def start(self):
        with open(self.b.conf) as f:
            text = f.read()
        with open(self.conf, "w") as f:
            f.write(text.replace("\n[mta]\n", f"\n[mta]\nmetrics_listen = 127.0.0.1:"
                                 f"{self.metrics_port}\n", 1))
        shutil.rmtree(os.path.join(self.b.dir, "queue"), ignore_errors=True)
        self.b.start("mta", [binary("mta/mailtier-mta"), "-f", "-c", self.conf], self.port)
        wait_port(self.metrics_port, self.b.procs["mta"])
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.scraper, daemon=True)
        self.thread.start()

    def stop(self):
        if self.done is not None:
            self.done.set()
            self.thread.join(10)
            self.done = None
            log(f"{self.name}: {self.scrapes} scrapes of /metrics "
                f"({self.scrape_bytes // max(1, self.scrapes)} bytes each), "
                f"{self.scrape_errors} failed")
        super().stop()


def group_cpu_us(pgid):
    """User and system CPU seconds of every live process in process group
    pgid (rspamd's main process and its workers)."""
    user = system = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:       # field 5, pgrp
            user += int(fields[11]) / HZ
            system += int(fields[12]) / HZ
    return user, system


class Filters:
    """Debian's rspamd in milter mode and an unbound for its DNS, started
    once for the run by tests/integration/filters.py (the test suite's
    set-up: its own config, loopback only, no Internet-reaching module)."""

    def __init__(self):
        sys.path[:0] = [os.path.join(SRC, "tests", "harness"),
                        os.path.join(SRC, "tests", "integration")]
        import filters
        import mtharness
        self.h = mtharness.Harness(verbose=False)
        self.dns = filters.DnsServer(self.h).start()
        self.rspamd = filters.Rspamd(self.h, self.dns).start()
        log(f"rspamd milter at {self.rspamd.milter_address} (pid "
            f"{self.rspamd.daemon.pid}), DNS at {self.dns.nameserver}")

    def cpu(self):
        return group_cpu_us(self.rspamd.daemon.pid)

    def stop(self):
        self.h.__exit__(None, None, None)


class MailtierRspamd(Mailtier):
    """mailtier-mta with rspamd as its milter on the SMTP listener
    ([mta] smtpd_milters = rspamd); rspamd's own CPU is counted apart."""
    name = "mailtier+rspamd"

    def __init__(self, b):
        super().__init__(b)
        self.conf = os.path.join(b.dir, "mailtier-rspamd.conf")
        self.filters = None

    def start(self):
        if self.filters is None:
            self.filters = Filters()
            self.b.extra_cpu["rspamd"] = self.filters.cpu
        with open(self.b.conf) as f:
            text = f.read()
        with open(self.conf, "w") as f:
            f.write(text.replace("\n[mta]\n", "\n[mta]\nsmtpd_milters = rspamd\n", 1)
                    + f"\n[milter.rspamd]\naddress = {self.filters.rspamd.milter_address}\n")
        shutil.rmtree(os.path.join(self.b.dir, "queue"), ignore_errors=True)
        self.b.start("mta", [binary("mta/mailtier-mta"), "-f", "-c", self.conf], self.port)

    def close(self):
        if self.filters is not None:
            self.b.extra_cpu.pop("rspamd", None)
            self.filters.stop()
            self.filters = None


class PostfixMTA:
    name = "postfix"

    def __init__(self, b):
        self.b = b
        self.port = b.pf_port
        d = b.directory
        with open(d["bind_password_file"]) as f:
            pw = f.read().strip()
        with open(d["admin_password_file"]) as f:
            admin = (d["admin_dn"], f.read().strip())
        self.pf = mta_postfix.Postfix(
            os.path.join(b.dir, "postfix"), variant=b.a.postfix_variant,
            smtp_port=self.port, ldap_uri=d["uris"].split()[0].rstrip("/"),
            base_dn=d["base_dn"], bind_dn=d["bind_dn"], bind_pw=pw, domain=DOMAIN,
            remote_domain=REMOTE, sink_port=b.sink_port,
            shards={"s1": b.l1, "s2": b.l2}, log=log, routing=b.a.postfix_routing,
            dump_bind=admin)
        self.logfile = self.pf.logfile

    def start(self):
        self.pf.configure()
        ok, tr = self.pf.check_routing("user1")
        if ok != f"user1@{DOMAIN}" or not tr.startswith("lmtp:inet:127.0.0.1:"):
            raise RuntimeError(f"postfix maps: user1 -> {ok!r}, transport {tr!r} "
                               f"(LDAP at {self.pf.ldap_uri}?)")
        self.pf.start()
        wait_port(self.port)

    def stop(self):
        self.pf.stop()

    def queue_size(self):
        return self.pf.queue_size()

    def cpu(self):
        return self.pf.cpu()

    def flush(self):
        self.pf.flush()


def run_step(b, mta, a, rate, seed, sessions=0, duration=None, record=True):
    duration = duration or a.duration
    la0 = loadavg()
    m0, cpu0, mta0 = machine_cpu(), b.cpu(), mta.cpu()
    before = mta.stats() if isinstance(mta, Mailtier) else None
    split0 = mta.pf.cpu_by_name() if isinstance(mta, PostfixMTA) else None
    log_off = log_offset(mta.logfile)
    peak = [0]
    done = threading.Event()

    def sampler():
        while not done.wait(1.0):
            try:
                peak[0] = max(peak[0], mta.queue_size())
            except Exception:
                pass
    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    load_arg = ["--sessions", str(sessions)] if sessions else ["--rate", str(rate)]
    try:
        p = subprocess.run([sys.executable, os.path.join(SRC, "bench", "mta-load.py"),
                            "--port", str(mta.port), *load_arg,
                            "--duration", str(duration), "--procs", str(a.procs),
                            "--users", str(a.users), "--domain", DOMAIN,
                            "--remote-domain", REMOTE, "--seed", str(seed)],
                           capture_output=True, text=True, timeout=duration + 300)
    finally:
        done.set()
        th.join(5)
    if p.returncode != 0:
        raise RuntimeError(f"mta-load: {p.stderr}")
    load = json.loads(p.stdout.strip().splitlines()[-1])
    m1 = machine_cpu()
    backlog = mta.queue_size()
    peak[0] = max(peak[0], backlog)
    t0 = time.monotonic()
    flushed = False
    left = backlog
    while left > 0:
        waited = time.monotonic() - t0
        if waited > a.settle and not flushed:
            mta.flush()
            flushed = True
        if waited > a.settle + 60:
            break
        time.sleep(0.25)
        left = mta.queue_size()
    drain = time.monotonic() - t0
    cpu1, mta1 = b.cpu(), mta.cpu()
    if not record:
        return None
    planned = max(1, load["planned"])
    ok = load["ok"]
    r = {
        "mta": mta.name, "rate": rate if not sessions else f"{sessions}s",
        "achieved": load["achieved_rate_per_min"], "ok": ok, "planned": load["planned"],
        "err": load["err"], "errors": load["errors"],
        "data_avg": load["data_rt_ms"]["avg"], "data_p95": load["data_rt_ms"]["p95"],
        "data_p50": load["data_rt_ms"]["p50"], "data_p99": load["data_rt_ms"]["p99"],
        "data_max": load["data_rt_ms"]["max"],
        "lag_p95": load["lag_ms"]["p95"], "wall_s": load["wall_s"],
        "mean_bytes": load["mean_msg_bytes"], "backlog": backlog, "peak": peak[0],
        "drain_s": round(drain, 1), "left": left,
        "cpu": {k: round(sum(cpu1[k]) - sum(cpu0.get(k, (0, 0))), 1) for k in cpu1},
        "mta_cpu_user": round(mta1[0] - mta0[0], 2),
        "mta_cpu_sys": round(mta1[1] - mta0[1], 2),
        "client_cpu": load["loadgen_cpu_s"], "loadavg": la0,
        "machine_busy_pct": round(100 * (m1[0] - m0[0]) / max(1, m1[2] - m0[2]), 1),
        "steal_pct": round(100 * (m1[1] - m0[1]) / max(1, m1[2] - m0[2]), 1),
    }
    r["mta_cpu_ms_per_msg"] = round(1000 * (r["mta_cpu_user"] + r["mta_cpu_sys"])
                                    / max(1, ok), 3)
    if "rspamd" in r["cpu"]:
        r["rspamd_cpu_ms_per_msg"] = round(1000 * r["cpu"]["rspamd"] / max(1, ok), 3)
    if before is not None:
        after = mta.stats()
        submitted = after["submitted"] - before["submitted"]
        flushes = after["log_flushes"] - before["log_flushes"]
        r["flushes_per_msg"] = round(flushes / submitted, 3) if submitted else None
        # lazy flushes: only post-delivery saves/removals in the batch (no one waits)
        lazy = after["lazy_log_flushes"] - before["lazy_log_flushes"]
        r["lazy_flushes_per_msg"] = round(lazy / submitted, 3) if submitted else None
        r["company_waits"] = after["company_waits"] - before["company_waits"]
        for k in ("commit", "flush"):    # share of the step the thread was busy
            r[f"{k}_busy"] = round((after[f"{k}_usecs"] - before[f"{k}_usecs"])
                                   / 1e6 / duration, 2)
    else:
        r["flushes_per_msg"] = None
        r["postfix_cpu_by_name"] = mta.pf.cpu_split(split0, mta.pf.cpu_by_name())
    time.sleep(0.2)                     # the last log lines
    r["deliveries"] = d = delivery_counts(mta.logfile, log_off)
    why = []
    if d.get("local_sent", 0) != ok or d.get("remote_sent", 0) != ok:
        why.append(f"delivered local {d.get('local_sent', 0)}, remote "
                   f"{d.get('remote_sent', 0)} of {ok}")
    if load["err"] > 0.001 * planned:
        why.append(f"errors {load['err']}")
    if not sessions:
        if (load["lag_ms"]["p95"] or 0) > a.max_lag:
            why.append(f"client lag p95 {load['lag_ms']['p95']} ms")
        if backlog > max(10, rate / 60 * a.max_backlog_s):
            why.append(f"backlog {backlog}")
    if drain > a.drain_bound:
        why.append(f"drain {drain:.1f} s")
    if left:
        why.append(f"{left} left")
    if (r["data_p95"] or 1e9) > a.max_data_p95:
        why.append(f"DATA p95 {r['data_p95']} ms")
    r["holds"] = not why
    r["why"] = ", ".join(why)
    return r


def sweep(b, mta, a, rep, rates):
    """One MTA at every rate (and the closed step): one repetition."""
    if a.quiet_wait > 0:
        t0 = time.monotonic()
        while loadavg() >= a.max_load and time.monotonic() - t0 < a.quiet_wait:
            time.sleep(5)
        if loadavg() >= a.max_load:
            log(f"load average still {loadavg()} after {a.quiet_wait} s: measuring anyway")
    log(f"--- {mta.name}, repetition {rep}: fresh stores, {mta.name} up"
        f" (load average {loadavg()})")
    b.fresh_stores()
    mta.start()
    results = []
    try:
        if a.warmup:
            run_step(b, mta, a, rates[0], 999, duration=a.warmup, record=False)
        failed = 0
        for i, rate in enumerate(rates):
            r = run_step(b, mta, a, rate, seed=a.seed + 1000 * rep + i)
            r["rep"] = rep
            results.append(r)
            print(json.dumps(r), flush=True)
            log(f"{mta.name} rep {rep} {rate}/min: achieved {r['achieved']:.0f}, DATA "
                f"{r['data_avg']}/{r['data_p95']} ms, backlog {r['backlog']}, drain "
                f"{r['drain_s']} s, load avg {r['loadavg']}: "
                + ("holds" if r["holds"] else f"FAILS ({r['why']})"))
            failed = 0 if r["holds"] else failed + 1
            if failed >= a.stop_after and i + 1 < len(rates):
                log(f"{mta.name}: {failed} failed step(s) in a row, rest of the ramp skipped")
                break
        if a.closed:
            r = run_step(b, mta, a, 0, seed=a.seed + 1000 * rep + 999, sessions=a.closed)
            r["rep"] = rep
            results.append(r)
            print(json.dumps(r), flush=True)
            log(f"{mta.name} rep {rep} closed {a.closed}: achieved {r['achieved']:.0f}, "
                f"DATA {r['data_avg']}/{r['data_p95']} ms, flushes/msg "
                f"{r['flushes_per_msg']}")
    finally:
        mta.stop()
    return results


def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def fmt(x, nd=1):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:,.{nd}f}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def report(results, a, rates, mtas, load_samples, cmd):
    print(f"\n{'mta':>8} {'rep':>3} {'load':>6} {'achieved':>9} {'DATA avg':>9} "
          f"{'DATA p95':>9} {'lag p95':>8} {'backlog':>7} {'peak':>6} {'drain s':>7} "
          f"{'flush/msg':>9} {'err':>5} {'holds':>5} {'ldavg':>5} {'busy%':>5}  "
          "cpu s: mta (user+sys) / popstores / sink / client, mta ms/msg")
    for r in results:
        c = r["cpu"]
        print(f"{r['mta']:>8} {r['rep']:>3} {r['rate']!s:>6} {r['achieved']:>9.0f} "
              f"{r['data_avg']!s:>7}ms {r['data_p95']!s:>7}ms {r['lag_p95']!s:>6}ms "
              f"{r['backlog']:>7} {r['peak']:>6} {r['drain_s']:>7} "
              f"{r['flushes_per_msg']!s:>9} {r['err']:>5} "
              f"{'yes' if r['holds'] else 'NO':>5} {r['loadavg']:>5} "
              f"{r['machine_busy_pct']:>5}  {r['mta_cpu_user']}+{r['mta_cpu_sys']} / "
              f"{round(c.get('popstore-s1', 0) + c.get('popstore-s2', 0), 1)} / "
              f"{c.get('sink')} / {r['client_cpu']}, {r['mta_cpu_ms_per_msg']}"
              + ("" if r["holds"] or isinstance(r["rate"], str) else f"  [{r['why']}]"))

    # per MTA and repetition: the highest rate that holds
    best = {m: {} for m in mtas}
    closed = {m: {} for m in mtas}
    for r in results:
        if isinstance(r["rate"], str):
            closed[r["mta"]][r["rep"]] = r
        elif r["holds"]:
            cur = best[r["mta"]].get(r["rep"])
            if cur is None or r["rate"] > cur["rate"]:
                best[r["mta"]][r["rep"]] = r
    reps = sorted({r["rep"] for r in results})
    print(f"\n== bench/mta summary: {cmd}")
    print(f"   ~24 KB mean messages, 1 local + 1 remote recipient, open loop at "
          f"{','.join(map(str, rates))} msgs/min, {a.duration} s per step, "
          f"{len(reps)} repetition(s); Postfix: {a.postfix_variant} "
          f"(bench/specmail-peer/conf-{a.postfix_variant}/postfix), routing to the "
          f"shards by {a.postfix_routing}")
    print(f"   holds = errors <= 0.1%, client lag p95 <= {a.max_lag} ms, backlog <= "
          f"{a.max_backlog_s} s of arrivals, drained in <= {a.drain_bound} s, "
          f"DATA p95 <= {a.max_data_p95} ms")
    if load_samples:
        print(f"   load average (1 min) at the steps: min {min(load_samples)}, "
              f"median {round(med(load_samples), 2)}, max {max(load_samples)}")
    print(f"\n| MTA | highest holding rate per repetition: target -> achieved msgs/min "
          f"(DATA mean / p95 ms) | median achieved | median DATA mean / p95 |")
    print("| --- | --- | --- | --- |")
    summary = {}
    for m in mtas:
        cells, ach, dm, dp = [], [], [], []
        for rep in reps:
            r = best[m].get(rep)
            if not any(x["mta"] == m and x["rep"] == rep for x in results):
                continue
            if r is None:
                cells.append("none")
                ach.append(0)
                continue
            top = r["rate"] == rates[-1]
            cells.append(f"{r['rate']:,} -> {r['achieved']:,.0f}{'+' if top else ''} "
                         f"({r['data_avg']} / {r['data_p95']})")
            ach.append(r["achieved"])
            dm.append(r["data_avg"])
            dp.append(r["data_p95"])
        rate_med = med([best[m][rep]["rate"] if rep in best[m] else 0 for rep in reps
                        if any(x["mta"] == m and x["rep"] == rep for x in results)])
        summary[m] = {"achieved": med(ach), "rate": rate_med, "data": med(dm),
                      "p95": med(dp)}
        print(f"| {m} | {'; '.join(cells)} | {fmt(med(ach), 0)} | "
              f"{fmt(med(dm))} / {fmt(med(dp))} |")
    print("   (+: held at the highest rate tried; the true limit is higher)")
    print("\nCPU per message of the MTA itself (mailtier-mta; Postfix: master and"
          " all its children), median over the steps that held, ms user+system:")
    for m in mtas:
        rs = [r for r in results if r["mta"] == m and r["holds"]
              and not isinstance(r["rate"], str)]
        if rs:
            print(f"  {m}: {fmt(med([r['mta_cpu_ms_per_msg'] for r in rs]), 2)} ms "
                  f"(user {fmt(med([1000 * r['mta_cpu_user'] / max(1, r['ok']) for r in rs]), 2)},"
                  f" system {fmt(med([1000 * r['mta_cpu_sys'] / max(1, r['ok']) for r in rs]), 2)};"
                  f" {len(rs)} steps)")
    if "mailtier" in summary and "mailtier+metrics" in summary:
        off, on = summary["mailtier"], summary["mailtier+metrics"]
        cpu = {m: med([r["mta_cpu_ms_per_msg"] for r in results if r["mta"] == m
                       and r["holds"] and not isinstance(r["rate"], str)])
               for m in ("mailtier", "mailtier+metrics")}
        print(f"\nmetrics on and scraped every {a.scrape_interval} s / metrics off "
              f"(medians): highest holding rate {fmt(on['achieved'], 0)} / "
              f"{fmt(off['achieved'], 0)} msgs/min"
              + (f" = {on['achieved'] / off['achieved']:.3f}" if off["achieved"] else "")
              + f"; DATA mean {fmt(on['data'])} / {fmt(off['data'])} ms; the MTA's CPU "
              f"per message {fmt(cpu['mailtier+metrics'], 3)} / {fmt(cpu['mailtier'], 3)} ms")
        for rate in rates:
            pair = {m: [r for r in results if r["mta"] == m and r["rate"] == rate]
                    for m in ("mailtier", "mailtier+metrics")}
            if pair["mailtier"] and pair["mailtier+metrics"]:
                c_on = med([r["mta_cpu_ms_per_msg"] for r in pair["mailtier+metrics"]])
                c_off = med([r["mta_cpu_ms_per_msg"] for r in pair["mailtier"]])
                print(f"  at {rate:,}/min: achieved "
                      f"{fmt(med([r['achieved'] for r in pair['mailtier+metrics']]), 0)} / "
                      f"{fmt(med([r['achieved'] for r in pair['mailtier']]), 0)}, DATA mean "
                      f"{fmt(med([r['data_avg'] for r in pair['mailtier+metrics']]))} / "
                      f"{fmt(med([r['data_avg'] for r in pair['mailtier']]))} ms, CPU/msg "
                      f"{fmt(c_on, 3)} / {fmt(c_off, 3)} ms")
    if "mailtier" in summary and "mailtier+rspamd" in summary:
        report_milter_ab(results, rates, summary)
    ratio = None
    if "mailtier" in summary and "postfix" in summary:
        mt, pf = summary["mailtier"], summary["postfix"]
        pf_capped = pf["rate"] == rates[-1]
        if pf["achieved"] and not pf_capped:
            ratio = mt["achieved"] / pf["achieved"]
            capped = mt["rate"] == rates[-1]
            print(f"\nratio of the medians, mailtier / Postfix: "
                  f"{'>= ' if capped else ''}{ratio:.2f}x "
                  f"({fmt(mt['achieved'], 0)} / {fmt(pf['achieved'], 0)} msgs/min)")
        elif pf_capped:
            print("\nratio: none (Postfix held at the highest rate tried; add higher --rates)")
        else:
            print("\nratio: none (Postfix held at no rate tried; add lower --rates)")

        def at_rate(target, who="mailtier"):
            """who's median DATA mean/p95 at the smallest tried rate >= target."""
            cands = [x for x in rates if x >= target]
            if not cands:
                return None, None, None, 0
            rate = cands[0]
            rs = [r for r in results if r["mta"] == who and r["rate"] == rate]
            held = sum(1 for r in rs if r["holds"])
            return (rate, med([r["data_avg"] for r in rs]),
                    med([r["data_p95"] for r in rs]), f"{held}/{len(rs)}")
        if pf["rate"]:
            rate, dmean, dp95, held = at_rate(pf["rate"])
            _r, pmean, pp95, pheld = at_rate(pf["rate"], "postfix")
            print(f"mailtier at Postfix's highest holding rate ({fmt(pf['rate'], 0)}/min"
                  f"{'' if rate == pf['rate'] else f', tried {rate}'}): DATA mean "
                  f"{fmt(dmean)} ms, p95 {fmt(dp95)} ms (median; held in {held} runs)"
                  f" -- Postfix there: DATA mean {fmt(pmean)} ms, p95 {fmt(pp95)} ms"
                  f" (held in {pheld})")
            rate3, dmean3, dp953, held3 = at_rate(3 * pf["rate"])
            if rate3 is None:
                print(f"mailtier at 3x Postfix ({fmt(3 * pf['rate'], 0)}/min): not tried "
                      "(above --rates)")
            else:
                print(f"mailtier at 3x Postfix ({fmt(3 * pf['rate'], 0)}/min, tried "
                      f"{rate3:,}): DATA mean {fmt(dmean3)} ms, p95 {fmt(dp953)} ms "
                      f"(median; held in {held3} runs)")
    if a.closed:
        print(f"\nclosed loop, {a.closed} sessions ({a.duration} s):")
        for m in mtas:
            rs = list(closed[m].values())
            if rs:
                print(f"  {m}: {fmt(med([r['achieved'] for r in rs]), 0)} msgs/min, DATA "
                      f"mean {fmt(med([r['data_avg'] for r in rs]))} ms, p95 "
                      f"{fmt(med([r['data_p95'] for r in rs]))} ms, backlog at the end "
                      f"{fmt(med([r['backlog'] for r in rs]))}"
                      + (f", flushes per message {fmt(med([r['flushes_per_msg'] for r in rs]), 3)}"
                         f" (runs: {', '.join(str(r['flushes_per_msg']) for r in rs)}; of"
                         f" which lazy, after delivery: "
                         f"{fmt(med([r.get('lazy_flushes_per_msg') for r in rs]), 3)})"
                         if m == "mailtier" else "")
                      + f" (median of {len(rs)})")
    # the targets
    if ratio is not None or (a.closed and closed.get("mailtier")):
        print("\ntargets:")
    if ratio is not None:
        print(f"  >= 3x Postfix's msgs/min at equal QoS: {ratio:.2f}x -> "
              f"{'met' if ratio >= 3 else 'NOT met'}")
        pf = summary["postfix"]
        if pf["rate"]:
            rate3, dmean3, _p, held3 = at_rate(3 * pf["rate"])
            if rate3 is None:
                print("  DATA mean < 10 ms at that load: not measured (3x Postfix above --rates)")
            else:
                print(f"  DATA mean < 10 ms at that load ({rate3:,}/min): "
                      f"{fmt(dmean3)} ms -> "
                      f"{'met' if dmean3 is not None and dmean3 < 10 else 'NOT met'}")
    if a.closed and closed.get("mailtier"):
        f = med([r["flushes_per_msg"] for r in closed["mailtier"].values()])
        print(f"  flushes per message <= 0.25 at {a.closed} sessions: {fmt(f, 3)} -> "
              f"{'met' if f is not None and f <= 0.25 else 'NOT met'}"
              + ("" if a.closed == 32 else " (the target is at 32)"))


def report_milter_ab(results, rates, summary):
    """mailtier with rspamd as its milter against mailtier without, same
    run: throughput, the MTA's own CPU per message (and what the filter
    adds to it), rspamd's CPU per message apart."""
    def held(m):
        return [r for r in results if r["mta"] == m and r["holds"]
                and not isinstance(r["rate"], str)]
    off, on = summary["mailtier"], summary["mailtier+rspamd"]
    print(f"\nwith rspamd as milter / without (medians): highest holding rate "
          f"{fmt(on['achieved'], 0)} / {fmt(off['achieved'], 0)} msgs/min; DATA mean "
          f"{fmt(on['data'])} / {fmt(off['data'])} ms")
    print("  at each rate (median over repetitions): achieved, DATA mean, the MTA's "
          "CPU per message with / without, rspamd's CPU per message")
    added, added_held = [], []
    for rate in rates:
        pair = {m: [r for r in results if r["mta"] == m and r["rate"] == rate]
                for m in ("mailtier", "mailtier+rspamd")}
        if not (pair["mailtier"] and pair["mailtier+rspamd"]):
            continue
        c_on = med([r["mta_cpu_ms_per_msg"] for r in pair["mailtier+rspamd"]])
        c_off = med([r["mta_cpu_ms_per_msg"] for r in pair["mailtier"]])
        spam = med([r.get("rspamd_cpu_ms_per_msg") for r in pair["mailtier+rspamd"]])
        both_hold = all(r["holds"] for r in pair["mailtier"] + pair["mailtier+rspamd"])
        if c_on is not None and c_off is not None:
            added.append(c_on - c_off)
            if both_hold:
                added_held.append(c_on - c_off)
        print(f"  {rate:,}/min: achieved "
              f"{fmt(med([r['achieved'] for r in pair['mailtier+rspamd']]), 0)} / "
              f"{fmt(med([r['achieved'] for r in pair['mailtier']]), 0)}, DATA mean "
              f"{fmt(med([r['data_avg'] for r in pair['mailtier+rspamd']]))} / "
              f"{fmt(med([r['data_avg'] for r in pair['mailtier']]))} ms, MTA CPU/msg "
              f"{fmt(c_on, 3)} / {fmt(c_off, 3)} ms, rspamd CPU/msg {fmt(spam, 3)} ms"
              + ("" if both_hold else "  (a step did not hold)"))
    if added:
        # The CPU per message is measured whether or not the step met the
        # QoS bounds (a slow filter makes the client wait, not the MTA
        # work), so every rate both arms ran counts; the held ones apart.
        a_med = med(added)
        print(f"  the MTA's own added CPU per message at each rate: "
              f"{', '.join(f'{x:+.3f}' for x in added)} ms; median {a_med:+.3f} ms "
              f"-> target <= 0.2 ms {'met' if a_med <= 0.2 else 'NOT met'}"
              + (f" (rates where both arms held: median {med(added_held):+.3f} ms)"
                 if added_held else ""))
    rs = held("mailtier+rspamd")
    if rs:
        print(f"  rspamd CPU per message (median over the steps that held): "
              f"{fmt(med([r.get('rspamd_cpu_ms_per_msg') for r in rs]), 3)} ms; "
              f"the MTA's: {fmt(med([r['mta_cpu_ms_per_msg'] for r in rs]), 3)} ms")


def report_from_log(ap, path):
    """The summary of a saved run, with that run's options."""
    results, cmd = [], None
    with open(path) as f:
        for line in f:
            if line.startswith('{"mta"'):
                results.append(json.loads(line))
            elif cmd is None and "] start: " in line:
                cmd = line.split("] start: ", 1)[1].strip()
    if cmd is None or not results:
        sys.exit(f"bench/mta: {path}: no start: line or no step results")
    argv = cmd.split("bench/mta.py", 1)[1].split()
    a = ap.parse_args(argv)
    rates = sorted(int(r) for r in a.rates.split(",") if r)
    report(results, a, rates, [m for m in SYSTEMS if any(r["mta"] == m for r in results)],
           [r["loadavg"] for r in results], cmd)


SYSTEMS = ("mailtier", "mailtier+metrics", "mailtier+rspamd", "postfix")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="4000,6000,8000,10000,12000,15000,18000,"
                    "21000,24000,27000,30000")
    ap.add_argument("--duration", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--closed", type=int, default=0, help="closed-loop sessions (0: no)")
    ap.add_argument("--only", choices=("mailtier", "postfix"))
    ap.add_argument("--postfix-variant", choices=("tuned", "defaults"), default="tuned")
    ap.add_argument("--postfix-routing", choices=("ldap", "hash"), default="ldap",
                    help="Postfix's route to a user's shard: LDAP mailHost at each "
                    "lookup, or a hash table written once from the directory")
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=5, help="unrecorded seconds at the first rate")
    ap.add_argument("--stop-after", type=int, default=2)
    ap.add_argument("--drain-bound", type=float, default=10)
    ap.add_argument("--max-backlog-s", type=float, default=2)
    ap.add_argument("--max-lag", type=float, default=500)
    ap.add_argument("--max-data-p95", type=float, default=500)
    ap.add_argument("--settle", type=float, default=180,
                    help="max wait for the queue to empty after a step before a flush")
    ap.add_argument("--max-load", type=float, default=3.0)
    ap.add_argument("--quiet-wait", type=float, default=0,
                    help="before each sweep, wait up to this many seconds for the"
                    " 1-min load average to drop below --max-load")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--delivery-concurrency", type=int, default=16)
    ap.add_argument("--remote-concurrency", type=int, default=20)
    ap.add_argument("--keep", action="store_true", help="keep the run directory")
    ap.add_argument("--metrics-ab", action="store_true",
                    help="mailtier with metrics off against mailtier with metrics_listen "
                    "set and /metrics scraped every --scrape-interval s (no Postfix)")
    ap.add_argument("--scrape-interval", type=float, default=1.0)
    ap.add_argument("--milter-ab", action="store_true",
                    help="mailtier without filters against mailtier with rspamd as "
                    "its milter on port 25 (no Postfix)")
    ap.add_argument("--report", metavar="LOG",
                    help="print the summary again from a saved run's output (its JSON"
                    " lines and start: line); runs nothing")
    a = ap.parse_args()
    if a.report:
        return report_from_log(ap, a.report)
    rates = sorted(int(r) for r in a.rates.split(",") if r)
    if not rates:
        sys.exit("bench/mta: no --rates")
    if os.geteuid() != 0 and a.only != "mailtier" and not (a.metrics_ab or a.milter_ab):
        sys.exit("bench/mta: run as root (Postfix), or --only mailtier")
    cmd = "MT_BUILDDIR=" + BUILD + " " + " ".join(["bench/mta.py"] + sys.argv[1:])

    def on_term(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)

    log(f"start: {cmd}")
    log(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    b = Bench(a)
    results = []
    mta = None
    try:
        b.setup()
        systems = {"mailtier": Mailtier(b), "postfix": PostfixMTA(b),
                   "mailtier+metrics": MailtierScraped(b),
                   "mailtier+rspamd": MailtierRspamd(b)}
        mtas = (["mailtier", "mailtier+metrics"] if a.metrics_ab else
                ["mailtier", "mailtier+rspamd"] if a.milter_ab else
                [m for m in ("mailtier", "postfix") if a.only in (None, m)])
        for rep in range(1, a.repeat + 1):
            order = mtas if rep % 2 else list(reversed(mtas))
            for m in order:
                mta = systems[m]
                results += sweep(b, mta, a, rep, rates)
                mta = None
    except KeyboardInterrupt:
        log("interrupted")
    finally:
        if mta is not None:
            try:
                mta.stop()
            except Exception as e:
                log(f"stopping {mta.name}: {e}")
        systems_made = locals().get("systems") or {}
        if "mailtier+rspamd" in systems_made:
            systems_made["mailtier+rspamd"].close()
        b.stop()
        log(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
        if a.keep:
            log(f"kept {b.dir}")
        else:
            shutil.rmtree(b.dir, ignore_errors=True)
    if results:
        report(results, a, rates, [m for m in SYSTEMS if any(r["mta"] == m for r in results)],
               [r["loadavg"] for r in results], cmd)


if __name__ == "__main__":
    main()
