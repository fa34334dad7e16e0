#!/usr/bin/env python3
"""bench/replication.py -- a replicated shard against a single-site one
(issue #38), in the same run on the same machine:

  - LMTP deliveries/s of ~24 KB messages at --conc sessions (default 32),
    p50 and p95, single-site and three-site alternately, medians of --runs;
  - failover: kill -9 of the three-site shard's master, then the time to
    the first LMTP 250 from the new master (a client that tries the
    shard's sites in turn, as the MTA does), --failovers times; the killed
    site restarts as a replica between rounds;
  - rebuild: a replica's data directory wiped and the site restarted; the
    time from its start to "received a full copy", and the store's bytes
    over that time.

    make -C build && make -C build bench/popstore-load && \\
    MT_BUILDDIR=$PWD/build bench/replication.py [--runs 3] [--duration 10]

All sites share this machine's cores and its one disk: the replicated
run does the store's work three times on them (each replica applies the
log and writes the pages), where a real deployment gives each site its
own host; the CPU each process spent per delivery is printed so the
serving site's own cost can be compared with single-site. Loopback
only."""

import argparse
import os
import shutil
import smtplib
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("MT_SRCDIR") or os.path.dirname(HERE)
sys.path[:0] = [os.path.join(SRC, "tests", "harness"),
                os.path.join(SRC, "tests", "integration")]
import mtharness  # noqa: E402
import repl_shard  # noqa: E402
from popstore import load  # noqa: E402  (bench/popstore.py: the load client's run)

USERS = 1000
D = "example.test"


def cpu_seconds(pid):
    """utime + stime of a process, in seconds (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Setup(repl_shard.Shard):
    """One config per layout, both serving shard s1 on their own ports."""

    def __init__(self, h, ds_dir, name, sites):
        super().__init__(h, ds_dir, name="s1", sites=sites, prefix=name)
        self.write_conf(popstore="max_sessions = 4000\nstats_interval = 0\n"
                        "commit_threads = 8\n", file=f"{name}.conf", cache="64M")

    def master(self, timeout=60):
        return super().master(timeout=timeout)


def first_250(setup, n, exclude):
    """Deliver one message, trying the sites in turn; the time of the 250."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for s in setup.sites:
            if s == exclude:
                continue
            try:
                lm = smtplib.LMTP("127.0.0.1", setup.lmtp[s], timeout=3)
                try:
                    lm.ehlo("bench.test")
                    lm.mail(f"bench@{D}", [f"XQUEUEID=F{n:06d}"])
                    if lm.rcpt(f"user1@{D}")[0] != 250:
                        continue
                    if lm.data(b"Subject: failover\r\n\r\nx\r\n")[0] == 250:
                        return time.monotonic(), s
                finally:
                    lm.close()
            except (OSError, smtplib.SMTPException):
                pass
        time.sleep(0.01)
    raise RuntimeError("no 250 within 60 s of the master's loss")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--conc", type=int, default=32)
    ap.add_argument("--failovers", type=int, default=10)
    args = ap.parse_args()
    subprocess.run(["make", "-s", "-C", mtharness.builddir(), "bench/popstore-load"],
                   check=True)
    client = mtharness.binary("bench/popstore-load")
    with mtharness.Harness() as h:
        ds = h.directory_up(shards=("s1",))
        single = Setup(h, ds["dir"], "single", ("a",))
        repl = Setup(h, ds["dir"], "repl", ("a", "b", "c"))
        h.ctl("directory", "down", "--dir", ds["dir"])
        h.ctl("users", "bulk", "--count", USERS, "--shards", "s1", config=single.conf)
        h.ctl("directory", "up", "--dir", ds["dir"], "--port", ds["port"])
        single.start("a")
        repl.start("a", create=True)
        repl.start("b")
        repl.start("c")
        repl.master()
        time.sleep(2)
        res = {"single": [], "repl": []}
        for run in range(args.runs):
            for name, setup in (("single", single), ("repl", repl)):
                m = setup.master()
                port = setup.lmtp[m]
                pids = {s: d.proc.pid for s, d in setup.daemons.items() if d.running()}
                cpu0 = {s: cpu_seconds(p) for s, p in pids.items()}
                out = load(client, "lmtp", "--port", port, "--conc", args.conc,
                           "--duration", args.duration, "--size", 24576,
                           "--first", 1, "--count", USERS)
                cpu = {s: cpu_seconds(p) - cpu0[s] for s, p in pids.items()}
                ok = max(1, int(out["ok"]))
                out["master_ms"] = 1000 * cpu[m] / ok
                out["replica_ms"] = 1000 * sum(v for s, v in cpu.items() if s != m) / ok
                res[name].append(out)
                print(f"{name:6} lmtp conc={args.conc} run={run + 1}: {out['per_s']}/s "
                      f"p50={out['p50_ms']} ms p95={out['p95_ms']} ms "
                      f"errors={out['errors']} cpu/delivery: master "
                      f"{out['master_ms']:.3f} ms, replicas {out['replica_ms']:.3f} ms",
                      flush=True)
        med = {k: {f: statistics.median(float(o[f]) for o in v)
                   for f in ("per_s", "p50_ms", "p95_ms", "master_ms", "replica_ms")}
               for k, v in res.items()}
        for k, m in med.items():
            print(f"median {k:6}: {m['per_s']:.0f}/s p50 {m['p50_ms']:.2f} ms "
                  f"p95 {m['p95_ms']:.2f} ms; CPU per delivery: the serving site "
                  f"{m['master_ms']:.3f} ms, the replicas together {m['replica_ms']:.3f} ms")
        print(f"replicated / single-site deliveries/s: "
              f"{med['repl']['per_s'] / med['single']['per_s']:.3f}; added p50 "
              f"{med['repl']['p50_ms'] - med['single']['p50_ms']:.2f} ms "
              f"(target >= 0.70 and <= 2 ms)")

        times = []
        for i in range(args.failovers):
            m = repl.master()
            killed = time.monotonic()
            repl.daemons[m].kill()
            at, new = first_250(repl, i, exclude=m)
            times.append(at - killed)
            print(f"failover {i + 1}: master {m} killed -> first 250 from {new} in "
                  f"{times[-1]:.2f} s", flush=True)
            repl.start(m)
        print(f"failover: median {statistics.median(times):.2f} s, worst "
              f"{max(times):.2f} s over {len(times)} (target <= 5 s median, <= 10 s worst)")

        m = repl.master()
        victim = next(s for s in repl.sites if s != m)
        repl.daemons[victim].stop()
        size = sum(os.path.getsize(os.path.join(repl.home(victim), f))
                   for f in os.listdir(repl.home(victim)) if f.endswith(".db"))
        shutil.rmtree(repl.home(victim))
        t0 = time.monotonic()
        repl.start(victim)
        repl.daemons[victim].wait_log(r"received a full copy", timeout=600)
        took = time.monotonic() - t0
        print(f"rebuild: site {victim} wiped ({size / 1e6:.1f} MB of databases) back "
              f"with a full copy in {took:.2f} s = {size / 1e6 / took:.1f} MB/s "
              f"(target >= 50 MB/s)")
        for d in list(repl.daemons.values()) + list(single.daemons.values()):
            if d.running():
                d.stop()


if __name__ == "__main__":
    main()
