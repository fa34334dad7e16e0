#!/usr/bin/env python3
"""bench/mta.py -- end-to-end throughput of mailtier-mta on one machine:
SMTP in -> durable queue -> LMTP to two real mailtier-popstore shards, and
SMTP relay of the remote copies to `mailtier-load sink`, with users in a
real slapd. Load: bench/mta-load.py (the reference client's session shape
and size table: 1 local + 1 remote recipient, ~24 KB mean), open loop, at
each rate of --rates for --duration seconds.

For each rate it reports the achieved msgs/min, the SMTP DATA response time
(mean and p95: final "." to 250), the queue left at the end of the load and
how long it took to drain (the queue must not grow: a rate holds if the
backlog drains within a few seconds), the queue's log flushes per message
(group commit), and the CPU seconds each process used.

  bench/mta.py [--rates 6000,12000,18000,24000] [--closed 32] [--duration 30]
               [--users 1000] [--procs 2] [--keep]

--closed N adds a closed-loop step: N sessions each sending its next
message as soon as the last was acknowledged (the issue's "flushes per
message at 32 concurrent sessions").

Binaries from $MT_BUILDDIR (default: ./build under the source tree). The
Postfix + Dovecot reference (../shared/peers) is measured with its own
scripts; its figure on this kind of machine is quoted in the output.
Trust boundary: a benchmark on loopback; runs as root or any user that can
bind the free ports it picks. """

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.environ.get("MT_BUILDDIR") or os.path.join(SRC, "build")
DOMAIN = "bench.test"


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


def wait_port(port, proc, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"bench/mta: {proc.args[0]} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"bench/mta: port {port} did not open")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Bench:
    def __init__(self, a):
        self.a = a
        self.dir = tempfile.mkdtemp(prefix="mta-bench.", dir="/var/tmp")
        self.procs = {}
        self.ctl = binary("ctl/mailtierctl")
        (self.ldap_port, self.smtp_port, self.sink_port, self.l1, self.p1,
         self.l2, self.p2) = free_ports(7)
        self.conf = os.path.join(self.dir, "mailtier.conf")

    def run_ctl(self, *args, input=None):
        env = dict(os.environ, MAILTIER_DATADIR=SRC)
        p = subprocess.run([self.ctl, "-c", self.conf, *map(str, args)], input=input,
                           capture_output=True, text=True, timeout=600, env=env)
        if p.returncode != 0:
            sys.exit(f"mailtierctl {' '.join(map(str, args))}: {p.stdout}{p.stderr}")
        return p.stdout

    def setup(self):
        slapd = os.path.join(self.dir, "slapd")
        env = dict(os.environ, MAILTIER_DATADIR=SRC)
        subprocess.run([self.ctl, "directory", "up", "--dir", slapd, "--port",
                        str(self.ldap_port), "--domain", DOMAIN], check=True,
                       capture_output=True, env=env, timeout=120)
        with open(os.path.join(slapd, "directory.conf")) as f:
            directory = f.read().split("\n[mta]")[0]
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
transport_map = remote.test=127.0.0.1:{self.sink_port}
queue_dir = {self.dir}/queue
max_sessions = 4000
max_sessions_per_client = 4000
delivery_concurrency = {self.a.delivery_concurrency}
remote_concurrency = {self.a.remote_concurrency}
""")
        self.run_ctl("users", "bulk", "--count", self.a.users, "--domain", DOMAIN,
                     "--shards", "s1,s2")

    def start(self, name, argv, port):
        log = open(os.path.join(self.dir, f"{name}.log"), "ab")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        self.procs[name] = p
        wait_port(port, p)

    def start_all(self):
        pop = binary("popstore/mailtier-popstore")
        self.start("popstore-s1", [pop, "-c", self.conf, "-s", "s1", "-F"], self.l1)
        self.start("popstore-s2", [pop, "-c", self.conf, "-s", "s2", "-F"], self.l2)
        self.start("sink", [binary("loadgen/mailtier-load"), "sink", "--listen",
                            f"127.0.0.1:{self.sink_port}", "--quiet"], self.sink_port)
        self.start("mta", [binary("mta/mailtier-mta"), "-f", "-c", self.conf],
                   self.smtp_port)

    def queue_stats(self):
        out = self.run_ctl("queue", "stats")
        return {k.strip(): int(v) for k, v in
                (line.split(":", 1) for line in out.splitlines() if ":" in line)}

    def cpu(self):
        return {name: cpu_seconds(p.pid) for name, p in self.procs.items()}

    def one_rate(self, rate, sessions=0):
        before, cpu0 = self.queue_stats(), self.cpu()
        load_arg = ["--sessions", str(sessions)] if sessions else ["--rate", str(rate)]
        p = subprocess.run([sys.executable, os.path.join(SRC, "bench", "mta-load.py"),
                            "--port", str(self.smtp_port), *load_arg,
                            "--duration", str(self.a.duration), "--procs",
                            str(self.a.procs), "--users", str(self.a.users),
                            "--domain", DOMAIN], capture_output=True, text=True,
                           timeout=self.a.duration + 300)
        if p.returncode != 0:
            sys.exit(f"mta-load: {p.stderr}")
        load = json.loads(p.stdout.strip().splitlines()[-1])
        backlog = self.queue_stats()["messages"]
        t0 = time.monotonic()
        while self.queue_stats()["messages"] > 0 and time.monotonic() - t0 < 120:
            time.sleep(0.5)
        drain = time.monotonic() - t0
        after, cpu1 = self.queue_stats(), self.cpu()
        submitted = after["submitted"] - before["submitted"]
        flushes = after["log_flushes"] - before["log_flushes"]
        busy = {k: round((after[k] - before[k]) / 1e6 / self.a.duration, 2)
                for k in ("commit_usecs", "flush_usecs")}
        return {
            "rate": rate if not sessions else f"{sessions}s",
            "achieved": load["achieved_rate_per_min"], "ok": load["ok"],
            "err": load["err"], "errors": load["errors"],
            "data_avg": load["data_rt_ms"]["avg"], "data_p95": load["data_rt_ms"]["p95"],
            "mean_bytes": load["mean_msg_bytes"], "backlog": backlog,
            "drain_s": round(drain, 1), "left": after["messages"],
            "flushes_per_msg": round(flushes / submitted, 3) if submitted else None,
            "commit_busy": busy["commit_usecs"], "flush_busy": busy["flush_usecs"],
            "cpu": {k: round(cpu1[k] - cpu0[k], 1) for k in cpu1},
            "client_cpu": load["loadgen_cpu_s"],
        }

    def stop(self):
        for name in ("mta", "sink", "popstore-s1", "popstore-s2"):
            p = self.procs.get(name)
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
        env = dict(os.environ, MAILTIER_DATADIR=SRC)
        subprocess.run([self.ctl, "directory", "down", "--dir",
                        os.path.join(self.dir, "slapd")], capture_output=True, env=env)
        if not self.a.keep:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            print(f"kept {self.dir}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="6000,12000,18000,24000")
    ap.add_argument("--duration", type=int, default=30)
    ap.add_argument("--closed", type=int, default=0, help="closed-loop sessions (0: no)")
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--delivery-concurrency", type=int, default=16)
    ap.add_argument("--remote-concurrency", type=int, default=20)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    b = Bench(a)
    results = []
    try:
        b.setup()
        b.start_all()
        for rate in (int(r) for r in a.rates.split(",") if r):
            r = b.one_rate(rate)
            results.append(r)
            print(json.dumps(r), flush=True)
        if a.closed:
            r = b.one_rate(0, sessions=a.closed)
            results.append(r)
            print(json.dumps(r), flush=True)
    finally:
        b.stop()
    print(f"\n{'load':>8} {'achieved':>9} {'DATA avg':>9} {'DATA p95':>9} "
          f"{'backlog':>8} {'drain s':>8} {'flush/msg':>9} {'errors':>6}  cpu s (mta/popstores/sink/client)")
    for r in results:
        c = r["cpu"]
        print(f"{r['rate']:>8} {r['achieved']:>9.0f} {r['data_avg']:>8}ms "
              f"{r['data_p95']:>8}ms {r['backlog']:>8} {r['drain_s']:>8} "
              f"{r['flushes_per_msg']!s:>9} {r['err']:>6}  {c.get('mta')}/"
              f"{round(c.get('popstore-s1', 0) + c.get('popstore-s2', 0), 1)}/"
              f"{c.get('sink')}/{r['client_cpu']}")
    print("\nreference (../shared/peers/README.md, same client shape, this kind of "
          "machine): Postfix + Dovecot ~10,000 msgs/min without queue growth, "
          "DATA mean 6.5 ms, p95 23.5 ms")


if __name__ == "__main__":
    main()
