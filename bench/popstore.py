#!/usr/bin/env python3
"""bench/popstore.py -- mailtier-popstore's benchmark (issue 4): LMTP
deliveries/s of ~24 KB messages at 1, 8 and 32 concurrent sessions, log
flushes per delivery, and POP3 sessions/s (USER/PASS, STAT, RETR all, DELE
all, QUIT) on mailboxes of 4 messages with 16 clients -- medians of --runs
runs. With --dovecot, the same client (bench/popstore-load) measures
Dovecot's lmtpd and pop3d configured as in ../shared/peers (untuned) and
../shared/peers-tuned (its documented performance settings), fsync on, in
the same run (each with its own slapd on free ports; see class Dovecot).

    make -C build check TESTS= && \\
    MT_BUILDDIR=$PWD/build bench/popstore.py [--runs 3] [--duration 10] [--dovecot]

(MT_PEERS: the directory holding peers/ and peers-tuned/; default ../shared.)

The store runs on a real slapd (mailtierctl directory up) with bulk users
(SSHA-512 hashes: one hash per login, like Dovecot's plain passwords here
cost nothing either), in a fresh temporary directory on the same disk as
/tmp, and every delivery and deletion is acknowledged only once durable
(group commit). Flushes per delivery come from the store's own counters
(`mailtierctl store stat`: log syncs / commits over the run).

The load client and both servers share this machine's cores: figures are
for one machine, loopback, and say nothing about a network. The load
average at each run is printed, because other work on the machine moves
these figures a lot.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("MT_SRCDIR") or os.path.dirname(HERE)
sys.path[:0] = [os.path.join(SRC, "tests", "harness"),
                os.path.join(SRC, "tests", "integration")]

import mtharness      # noqa: E402
import popstorelib    # noqa: E402

PEERS = os.environ.get("MT_PEERS") or os.path.join(SRC, "..", "shared")


def load(binary, *args):
    r = subprocess.run([binary] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=3600)
    out = dict(kv.split("=", 1) for kv in r.stdout.split())
    if r.returncode != 0 or not out:
        raise RuntimeError(f"popstore-load {args}: {r.stdout}{r.stderr}")
    return out


def loadavg():
    return open("/proc/loadavg").read().split()[0]


def daemon_counters(d):
    """(deliveries, flushes) from the daemon's own counters: SIGHUP makes
    it log a "stats when=reload" line."""
    d.reload()
    lines = [l for l in d.log().splitlines() if "stats when=reload" in l]
    m = re.search(r" deliveries=(\d+) .* flushes=(\d+) ", lines[-1])
    return int(m.group(1)), int(m.group(2))


def env_counters(h, conf):
    """Log syncs and commits of the whole environment (store stat)."""
    out = h.ctl("store", "stat", "s1", config=conf).stdout
    st = dict(line.split(": ", 1) for line in out.splitlines())
    return int(st["env_log_flushes"]), int(st["env_commits"])


def phases(out):
    """Mean ms per session of each POP3 step, as popstore-load measured."""
    return " ".join(f"{k[:-3]}={out[k]}" for k in ("connect_ms", "login_ms", "stat_ms",
                                                  "retr_ms", "dele_ms", "quit_ms"))


def median(values):
    return statistics.median(values) if values else float("nan")


def bench_popstore(h, args, client):
    env = popstorelib.Env(h, shards=("s1",), popstore_extra=(
        "max_sessions = 4000\nidle_timeout = 5m\nstats_interval = 0\n"))
    lmtp_users = 1000
    pop_users = args.pop_users * args.runs
    users = lmtp_users + pop_users
    t0 = time.monotonic()
    # Offline (slapadd) is much faster than through the running slapd.
    h.ctl("directory", "down", "--dir", env.dir)
    h.ctl("users", "bulk", "--count", users, "--shards", "s1", "--hash", "ssha512",
          config=env.conf)
    h.ctl("directory", "up", "--dir", env.dir, "--port", env.ds["port"])
    print(f"# {users} users provisioned in {time.monotonic() - t0:.1f} s", flush=True)
    d = env.start("s1")
    lmtp, pop3 = env.ports["s1"]["lmtp"], env.ports["s1"]["pop3"]
    res = {"lmtp": {}, "flushes": {}}
    for conc in () if args.pop_only else (1, 8, 32):
        rates, ratios = [], []
        for run in range(args.runs):
            d0, f0 = daemon_counters(d)
            e0 = env_counters(h, env.conf)
            la = loadavg()
            out = load(client, "lmtp", "--port", lmtp, "--conc", conc,
                       "--duration", args.duration, "--size", 24576,
                       "--first", 1, "--count", lmtp_users)
            d1, f1 = daemon_counters(d)
            e1 = env_counters(h, env.conf)
            rates.append(float(out["per_s"]))
            ratios.append((f1 - f0) / max(1, d1 - d0))
            env_ratio = (e1[0] - e0[0]) / max(1, e1[1] - e0[1])
            print(f"popstore lmtp conc={conc} run={run + 1}: {out['per_s']}/s "
                  f"p50={out['p50_ms']} ms p95={out['p95_ms']} ms errors={out['errors']} "
                  f"flushes/delivery={ratios[-1]:.3f} (group-commit flushes / "
                  f"deliveries; BDB log syncs / commits {env_ratio:.3f}) load={la}",
                  flush=True)
        res["lmtp"][conc] = median(rates)
        res["flushes"][conc] = median(ratios)
    # POP: fill a slice of mailboxes with 4 messages each per run.
    rates = []
    for run in range(args.runs):
        first = lmtp_users + 1 + run * args.pop_users
        load(client, "lmtp", "--port", lmtp, "--conc", 32, "--per-user", 4,
             "--size", 24576, "--first", first, "--count", args.pop_users)
        la = loadavg()
        out = load(client, "pop", "--port", pop3, "--conc", 16, "--duration",
                   args.duration, "--first", first, "--count", args.pop_users)
        rates.append(float(out["per_s"]))
        print(f"popstore pop conc=16 run={run + 1}: {out['per_s']}/s "
              f"p50={out['p50_ms']} ms p95={out['p95_ms']} ms errors={out['errors']} "
              f"msgs/session={out['msgs_per_session']} load={la} ({phases(out)})",
              flush=True)
        if int(out["ok"]) >= args.pop_users:
            print("# warning: every prepared mailbox was used; raise --pop-users", flush=True)
    res["pop"] = median(rates)
    d.stop()
    stats = [l for l in d.log().splitlines() if "stats when=exit" in l]
    if stats:
        m = re.search(r"flushes_per_delivery=(\S+).*max_batch=(\d+)", stats[-1])
        e = re.search(r" expunged=(\d+)(?: purged=(\d+))?", stats[-1])
        print(f"# daemon counters at exit: flushes/delivery={m.group(1)} "
              f"max_batch={m.group(2)} expunged={e.group(1)} "
              f"purged={e.group(2) or e.group(1)} (bodies deleted by then)", flush=True)
    return res


class Dovecot:
    """Dovecot (lmtpd + pop3d, LDAP passdb/userdb, maildir, fsync defaults)
    with its own slapd, from the configuration files of ../shared/<variant>
    (peers: untuned; peers-tuned: as its documentation advises for
    performance), on free loopback ports in a directory of its own so it
    disturbs nothing else. Users userNNNN@bench.test / pwNNNN (plain, as in
    the peers' set-up). Needs root, the Debian packages dovecot-lmtpd,
    dovecot-pop3d, dovecot-ldap and slapd, and a vmail user (uid 5000;
    created here if missing)."""

    def __init__(self, variant, users, imap=False, extra=""):
        """imap: also serve IMAP (dovecot-imapd) on self.imap; extra:
        lines appended to dovecot.conf (bench/popstore-imap.py's)."""
        import shutil
        import tempfile
        self.variant = variant
        self.peers = os.path.join(PEERS, variant)
        self.v = tempfile.mkdtemp(prefix=f"popstore-bench-{variant}-", dir="/var/tmp")
        os.chmod(self.v, 0o755)
        self.ldap, self.lmtp, self.pop3, self.imap = mtharness.free_ports(4)
        conf = os.path.join(self.v, "conf")
        for sub in ("slapd", "dovecot"):
            shutil.copytree(os.path.join(self.peers, "conf", sub), os.path.join(conf, sub))
        for root, _, files in os.walk(conf):
            for name in files:
                path = os.path.join(root, name)
                os.chmod(path, 0o644)
                text = open(path).read()
                for old, new in (("@CONF@", conf), ("@V@", self.v),
                                 ("/var/tmp/peers-tuned", self.v),
                                 ("/var/tmp/peers", self.v),
                                 ("13389", str(self.ldap)), ("12424", str(self.lmtp)),
                                 ("12110", str(self.pop3))):
                    text = text.replace(old, new)
                if imap and name == "dovecot.conf":
                    text = text.replace("protocols = pop3 lmtp", "protocols = pop3 lmtp imap")
                    text = text.replace("    port = 0\n", "    address = 127.0.0.1\n"
                                        f"    port = {self.imap}\n") + extra
                open(path, "w").write(text)
        for sub in ("run", "log", "ldap", "mail", "run/dovecot", "dovecot-state"):
            os.makedirs(os.path.join(self.v, sub), exist_ok=True)
        if subprocess.run(["getent", "passwd", "vmail"], capture_output=True).returncode != 0:
            subprocess.run(["useradd", "--system", "-u", "5000", "-U", "-M", "-s",
                            "/usr/sbin/nologin", "vmail"], check=True)
        subprocess.run(["chown", "vmail:vmail", os.path.join(self.v, "mail")], check=True)
        ldif = subprocess.run([sys.executable, os.path.join(self.peers, "genldif.py"),
                               str(users)], capture_output=True, check=True).stdout
        subprocess.run(["slapadd", "-q", "-f", os.path.join(conf, "slapd", "slapd.conf")],
                       input=ldif, check=True, capture_output=True)
        subprocess.run(["slapd", "-h", f"ldap://127.0.0.1:{self.ldap}/", "-f",
                        os.path.join(conf, "slapd", "slapd.conf")], check=True)
        mtharness.wait_port(self.ldap)
        subprocess.run(["dovecot", "-c", os.path.join(conf, "dovecot", "dovecot.conf")],
                       check=True)
        if not (mtharness.wait_port(self.lmtp) and mtharness.wait_port(self.pop3) and
                (not imap or mtharness.wait_port(self.imap))):
            raise RuntimeError(f"{variant}: dovecot did not start (see {self.v}/log)")

    def stop(self):
        for pidfile in ("run/dovecot/master.pid", "run/slapd.pid"):
            try:
                pid = int(open(os.path.join(self.v, pidfile)).read().split()[0])
                os.kill(pid, 15)
                for _ in range(50):
                    os.kill(pid, 0)
                    time.sleep(0.1)
            except (OSError, ValueError):
                pass
        subprocess.run(["rm", "-rf", self.v])


def bench_dovecot(args, client, variant):
    if not os.path.exists(os.path.join(PEERS, variant, "conf", "dovecot")):
        print(f"# {variant}: not found, skipped")
        return None
    pop_users = args.dovecot_pop_users
    users = 1000 + pop_users * args.runs
    try:
        dv = Dovecot(variant, users)
    except (OSError, subprocess.CalledProcessError, RuntimeError) as e:
        print(f"# {variant}: could not start Dovecot, skipped: {e}")
        return None
    width = max(4, len(str(users - 1)))
    fmt = ["--user-format", f"user%0{width}lu@bench.test",
           "--password-format", f"pw%0{width}lu"]
    popfmt = ["--user-format", f"user%0{width}lu", "--password-format", f"pw%0{width}lu"]
    res = {"lmtp": {}, "flushes": {}}
    name = f"dovecot ({variant})"
    try:
        for conc in () if args.pop_only else (1, 8, 32):
            rates = []
            for run in range(args.runs):
                la = loadavg()
                out = load(client, "lmtp", "--port", dv.lmtp, "--conc", conc,
                           "--duration", args.duration, "--size", 24576,
                           "--first", 0, "--count", 1000, *fmt)
                rates.append(float(out["per_s"]))
                print(f"{name} lmtp conc={conc} run={run + 1}: {out['per_s']}/s "
                      f"p50={out['p50_ms']} ms p95={out['p95_ms']} ms "
                      f"errors={out['errors']} load={la}", flush=True)
            res["lmtp"][conc] = median(rates)
        rates = []
        for run in range(args.runs):
            first = 1000 + run * pop_users
            load(client, "lmtp", "--port", dv.lmtp, "--conc", 32, "--per-user", 4,
                 "--size", 24576, "--first", first, "--count", pop_users, *fmt)
            la = loadavg()
            out = load(client, "pop", "--port", dv.pop3, "--conc", 16, "--duration",
                       args.duration, "--first", first, "--count", pop_users,
                       *popfmt)
            rates.append(float(out["per_s"]))
            print(f"{name} pop conc=16 run={run + 1}: {out['per_s']}/s "
                  f"p50={out['p50_ms']} ms p95={out['p95_ms']} ms "
                  f"errors={out['errors']} msgs/session={out['msgs_per_session']} "
                  f"load={la} ({phases(out)})", flush=True)
            if int(out["ok"]) >= pop_users:
                print("# warning: every prepared mailbox was used; raise "
                      "--dovecot-pop-users", flush=True)
        res["pop"] = median(rates)
    finally:
        dv.stop()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--pop-users", type=int, default=6000,
                    help="mailboxes filled per POP run (more than one run uses)")
    ap.add_argument("--dovecot-pop-users", type=int, default=2500,
                    help="the same for Dovecot (it delivers and serves fewer per second)")
    ap.add_argument("--dovecot", action="store_true",
                    help="also measure Dovecot configured as ../shared/peers{,-tuned} (root)")
    ap.add_argument("--pop-only", action="store_true",
                    help="measure POP sessions/s only (skip the LMTP rates)")
    args = ap.parse_args()
    # A benchmark's own client is built on demand, not by `make check`.
    subprocess.run(["make", "-s", "-C", mtharness.builddir(), "bench/popstore-load"],
                   check=True)
    client = mtharness.binary("bench/popstore-load")
    print(f"# bench/popstore.py --runs {args.runs} --duration {args.duration} "
          f"--pop-users {args.pop_users}; {os.cpu_count()} cores; "
          f"{time.strftime('%Y-%m-%d %H:%M:%S')}", flush=True)
    results = {}
    with mtharness.Harness() as h:
        results["mailtier-popstore"] = bench_popstore(h, args, client)
    if args.dovecot:
        for variant in ("peers", "peers-tuned"):
            r = bench_dovecot(args, client, variant)
            if r is not None:
                results[f"dovecot ({variant})"] = r

    print("\n# medians of %d runs" % args.runs)
    print("%-26s %10s %10s %10s %14s %12s" % ("system", "lmtp c=1", "lmtp c=8",
                                              "lmtp c=32", "flushes/dlv c=32", "pop/s c=16"))
    nan = float("nan")
    for name, r in results.items():
        print("%-26s %10.1f %10.1f %10.1f %14s %12.1f" % (
            name, r["lmtp"].get(1, nan), r["lmtp"].get(8, nan), r["lmtp"].get(32, nan),
            "%.3f" % r["flushes"][32] if r.get("flushes", {}).get(32) is not None
            else "-", r["pop"]))
    ours = results["mailtier-popstore"]
    dov = [r for n, r in results.items() if n.startswith("dovecot")]
    if dov and args.pop_only:
        best_pop = max(r["pop"] for r in dov)
        print(f"\nratio: pop {ours['pop'] / best_pop:.2f}x the better Dovecot (target >= 3)")
    elif dov:
        best_lmtp = max(r["lmtp"][32] for r in dov)
        best_pop = max(r["pop"] for r in dov)
        print(f"\nratios: lmtp c=32 {ours['lmtp'][32] / best_lmtp:.2f}x the better "
              f"Dovecot (target >= 2), pop {ours['pop'] / best_pop:.2f}x (target >= 3); "
              f"flushes/delivery c=32 {ours['flushes'][32]:.3f} (target <= 0.25)")


if __name__ == "__main__":
    main()
