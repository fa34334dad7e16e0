#!/usr/bin/env python3
"""bench/mmp-imap.py -- what the MMP costs and holds as an IMAP proxy
(issue 16's two figures), measured in one command on loopback:

  rate   IMAP sessions/s of bench/popstore-load's `imap` mix (16 clients,
         closed loop, one command at a time: LOGIN, SELECT INBOX, FETCH 1:*
         (FLAGS ENVELOPE), FETCH 1:2 BODY.PEEK[], STORE, MOVE 1 Archive,
         STORE \\Deleted, EXPUNGE, LOGOUT; the mix of bench/popstore-imap.py)
         directly against the one store shard's imap_listen and through
         mailtier-mmp's imap_listen in front of the same shard: plaintext
         LOGIN (allow_plaintext_auth = yes on both), --duration s a run,
         the two alternating (direct, MMP, MMP, direct, ...). Every run
         uses fresh users: their INBOXes filled with 4 messages of ~24 KB
         over LMTP and each logged in once (imap-prep: CREATE Archive)
         before the run, by the path the run measures, so no run sees
         another's mailboxes and both arms start with the same warm
         directory caches (a login through the MMP fills the MMP's auth
         cache and the store's lookup of the user; a direct one the
         store's auth cache). Reported: sessions/s per run and the
         medians, the ratio MMP / direct (target: at least 0.85, i.e. at
         most 15% fewer sessions/s), and the CPU per session of the MMP,
         the store and slapd from /proc/PID/stat over the run.
  idle   memory per idle proxied IMAP session: N sessions logged in through
         the MMP, SELECT INBOX, IDLE (the "+" continuation read), held; the
         MMP's RSS (VmRSS) with them minus before them (a fresh MMP each
         time), divided by N -- plain (imap_listen, LOGIN without TLS,
         `popstore-load imap-idle`) and implicit TLS (imaps_listen, TLS 1.3
         with a P-256 certificate; holder processes of this script, at most
         9,000 connections each, each from its own 127.0.1.x address).
         Targets: <= 16 KiB plain, <= 64 KiB TLS. The store's RSS per
         session is printed for reference. N is --idle, capped at
         (RLIMIT_NOFILE hard limit - 200) / 2: a proxied session holds two
         of the MMP's descriptors (client and store); the cap is printed.

    MT_BUILDDIR=$PWD/build bench/mmp-imap.py [--runs 3] [--duration 8]
        [--users 8000] [--idle 30000] [--idle-runs 1] [--parts rate,idle]
        [--pin CPU] [--prep path|direct] [--json FILE]

--pin CPU puts the MMP alone on one core and everything else (the load
client, the store, slapd) on the others, in both arms: the MMP as on a
host of its own, as the seed deployed it; the direct arm leaves that core
idle. Without it everything shares the cores. --prep direct logs each
run's users in directly to the store before either arm (the MMP's auth
cache is then cold in the MMP arm); the default logs them in by the
measured path.

One shard (s1) on a real slapd, users from `mailtierctl users bulk`
(user<K>@example.test / secret<K>, SSHA-512); the cluster is
tests/integration/mmp_setup.py's Cluster and the client
bench/popstore-load (built on demand). Everything on 127.0.0.1, every wait
bounded, every process this starts stopped at the end. The load client,
the MMP, the store and slapd share this machine's cores, so the ratio of
two runs in the same command is the figure to read, not the absolute
rates. Benchmark code, not a test.
"""

import argparse
import importlib.machinery
import importlib.util
import json
import os
import resource
import socket
import ssl
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_module(name, path):
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


# bench/popstore.py (load, loadavg, median) and bench/mmp (cpu_s, rss_kib,
# the P-256 key); both put tests/harness and tests/integration on the path.
popbench = load_module("popbench", os.path.join(HERE, "popstore.py"))
mmpbench = load_module("mmpbench", os.path.join(HERE, "mmp"))
import mtharness   # noqa: E402
import mmp_setup   # noqa: E402

DOMAIN = mmp_setup.DOMAIN
FD_SPARE = 200          # the MMP's listeners, slapd connections, logs
HOLD_MAX = 9000         # connections per holder process


def log(text):
    print(text, file=sys.stderr, flush=True)


class Bench:
    def __init__(self, h, args, client):
        self.h = h
        self.args = args
        self.client = client
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        self.idle_n = min(args.idle, (hard - FD_SPARE) // 2)
        self.rlimit = hard
        users = 2 * args.runs * args.users + self.idle_n
        sessions = max(4000, 2 * self.idle_n + 1000)
        self.c = mmp_setup.Cluster(
            h, {}, {}, shards=("s1",), backend="popstore",
            popstore_settings={"allow_plaintext_auth": "yes", "max_sessions": sessions,
                               "db_cache_size": "64M", "idle_timeout": "30m",
                               "stats_interval": "0"},
            cert_key="ec:" + mmpbench.Bench.ec_params(h))
        c = self.c
        t0 = time.monotonic()
        # Offline (slapadd) while slapd is stopped, as bench/mmp does.
        h.ctl("directory", "down", "--dir", c.dir)
        h.ctl("users", "bulk", "--count", users, "--shards", "s1", "--domain", DOMAIN,
              config=c.conf)
        h.ctl("directory", "up", "--dir", c.dir, "--port", c.ds["port"])
        log(f"# {users} users provisioned in {time.monotonic() - t0:.1f} s")
        self.store = c.shard_daemons["s1"]
        self.results = {}

    def mmp(self, **overrides):
        s = {"threads": self.args.mmp_threads, "allow_plaintext_auth": "yes",
             "conn_limit_per_client": 1000,
             "stats_interval": "0"}
        s.update(overrides)
        return self.c.start_mmp(**s)

    # rate

    def prepare(self, first, port):
        """Fresh users [first, first + --users): 4 messages each, one login
        on port (the path the run then measures)."""
        c, n = self.c, self.args.users
        t0 = time.monotonic()
        popbench.load(self.client, "lmtp", "--port", c.lmtp_port["s1"], "--conc", 32,
                      "--per-user", 4, "--size", 24576, "--first", first, "--count", n)
        popbench.load(self.client, "imap-prep", "--port", port, "--conc", 16,
                      "--duration", 600, "--first", first, "--count", n)
        log(f"  users {first}-{first + n - 1}: filled and prepared in "
            f"{time.monotonic() - t0:.1f} s")

    def rate_run(self, path, first):
        port = self.c.imap_port["s1"] if path == "direct" else self.c.mmp_imap_port
        self.prepare(first, port if self.args.prep == "path" else self.c.imap_port["s1"])
        pids = {"store": self.store.pid, "slapd": self.slapd_pid()}
        if path == "mmp":
            pids["mmp"] = self.c.mmp.pid
        la = popbench.loadavg()
        cpu0 = {k: mmpbench.cpu_s(p) for k, p in pids.items()}
        out = popbench.load(self.client, "imap", "--port", port, "--conc", self.args.conc,
                            "--duration", self.args.duration, "--first", first,
                            "--count", self.args.users)
        cpu = {k: mmpbench.cpu_s(p) - cpu0[k] for k, p in pids.items()}
        ok = int(out["ok"])
        r = {"sessions_per_s": float(out["per_s"]), "sessions": ok,
             "errors": int(out["errors"]), "p50_ms": float(out["p50_ms"]),
             "p95_ms": float(out["p95_ms"]), "loadavg": float(la),
             "cpu_ms_per_session": {k: round(v * 1000 / max(1, ok), 3)
                                    for k, v in cpu.items()},
             "steps_ms": {k[:-3]: float(v) for k, v in out.items()
                          if k.endswith("_ms") and not k.startswith("p")}}
        steps = " ".join(f"{k}={v}" for k, v in r["steps_ms"].items())
        log(f"  {path}: {r['sessions_per_s']} sessions/s ({ok} ok, {r['errors']} errors, "
            f"p50 {r['p50_ms']} ms, p95 {r['p95_ms']} ms) cpu ms/session "
            f"{r['cpu_ms_per_session']} load {la} ({steps})")
        if ok >= self.args.users:
            log("  # warning: every prepared user was used; raise --users")
        return r

    def slapd_pid(self):
        with open(os.path.join(self.c.ds["dir"], "slapd.pid")) as f:
            return int(f.read().split()[0])

    def pin(self):
        """--pin CPU: the MMP alone on CPU, everything else (this script and
        the load clients it starts, the store, slapd) on the other cores,
        as if the MMP had a host of its own (the seed's deployment): the
        direct arm leaves that core idle."""
        mmp_cpu = {self.args.pin}
        rest = set(range(os.cpu_count())) - mmp_cpu
        if not rest:
            raise SystemExit("--pin: needs at least two cores")

        def pin(pid, cpus):
            for tid in os.listdir(f"/proc/{pid}/task"):
                try:
                    os.sched_setaffinity(int(tid), cpus)
                except OSError:
                    pass
        pin(os.getpid(), rest)
        pin(self.store.pid, rest)
        pin(self.slapd_pid(), rest)
        pin(self.c.mmp.pid, mmp_cpu)
        log(f"pinned: the MMP on CPU {self.args.pin}, the rest on "
            f"{','.join(map(str, sorted(rest)))}")

    def part_rate(self):
        a = self.args
        log(f"rate: {a.runs} runs x {a.duration} s each way, {a.conc} clients, "
            f"{a.users} fresh users a run")
        self.mmp()
        if a.pin is not None:
            self.pin()
        runs = {"direct": [], "mmp": []}
        first = 1
        for i in range(a.runs):
            log(f" run {i + 1}")
            order = ("direct", "mmp") if i % 2 == 0 else ("mmp", "direct")
            for path in order:
                runs[path].append(self.rate_run(path, first))
                first += a.users
        med = {k: statistics.median(r["sessions_per_s"] for r in v) for k, v in runs.items()}
        cpu = {k: {who: statistics.median(r["cpu_ms_per_session"][who] for r in v)
                   for who in v[0]["cpu_ms_per_session"]} for k, v in runs.items()}
        self.results["rate"] = {"runs": runs, "median_sessions_per_s": med,
                                "median_cpu_ms_per_session": cpu,
                                "mmp_vs_direct": round(med["mmp"] / med["direct"], 3)}
        self.first_idle = first

    # idle sessions

    def part_idle(self):
        n = self.idle_n
        first = getattr(self, "first_idle", 1)
        out = {"sessions": n, "asked": self.args.idle, "rlimit_nofile": self.rlimit}
        if n < self.args.idle:
            out["note"] = (f"RLIMIT_NOFILE hard limit {self.rlimit} (cannot be raised "
                           f"here), 2 MMP descriptors a session: {n} sessions instead "
                           f"of {self.args.idle}")
            log(f"idle: {out['note']}")
        for kind in ("plain", "tls"):
            vals = []
            for _ in range(self.args.idle_runs):
                vals.append(self.idle_run(kind, n, first))
            out[kind] = {"runs": vals}
            for key in ("mmp_kib_per_session", "store_kib_per_session"):
                out[kind]["median_" + key] = statistics.median(v[key] for v in vals)
        self.results["idle"] = out

    def idle_run(self, kind, n, first):
        d = self.mmp(conn_limit=n + 100, conn_limit_per_client=n + 100, threads=2)
        time.sleep(0.5)
        m0, s0 = mmpbench.rss_kib(d.pid), mmpbench.rss_kib(self.store.pid)
        t0 = time.monotonic()
        procs, held, retries = (self.hold_plain if kind == "plain" else self.hold_tls)(n, first)
        took = time.monotonic() - t0
        try:
            time.sleep(2)
            m1, s1 = mmpbench.rss_kib(d.pid), mmpbench.rss_kib(self.store.pid)
        finally:
            for p in procs:
                if kind == "plain":
                    p.terminate()
                else:
                    p.stdin.close()
            for p in procs:
                p.wait(timeout=120)
        r = {"held": held, "retries": retries, "open_s": round(took, 1),
             "mmp_rss_kib": [m0, m1], "store_rss_kib": [s0, s1],
             "mmp_kib_per_session": round((m1 - m0) / max(1, held), 2),
             "store_kib_per_session": round((s1 - s0) / max(1, held), 2)}
        log(f"  idle {kind}: {held} of {n} held (opened in {took:.1f} s, {retries} "
            f"retries): MMP RSS {m0} -> {m1} KiB = {r['mmp_kib_per_session']} KiB a "
            f"session; store {s0} -> {s1} KiB = {r['store_kib_per_session']} KiB")
        if held < n:
            log(f"  # warning: only {held} of {n} sessions held (the figure is per held session)")
        return r

    def split(self, n):
        k = max(2, -(-n // HOLD_MAX))
        return [n // k + (1 if i < n % k else 0) for i in range(k)]

    def hold_plain(self, n, first):
        """popstore-load imap-idle processes (its own descriptor limit is
        its --conc + 256), from 127.0.0.1."""
        procs = []
        for k in self.split(n):
            procs.append(subprocess.Popen(
                [self.client, "imap-idle", "--port", str(self.c.mmp_imap_port),
                 "--conc", str(k), "--duration", "900", "--first", str(first),
                 "--count", str(k)], stdout=subprocess.PIPE, text=True))
            first += k
        held = 0
        for p in procs:
            line = p.stdout.readline()
            if not line.startswith("idle="):
                raise RuntimeError(f"popstore-load imap-idle: {line!r}")
            held += int(line.split("=")[1])
        return procs, held, 0

    def hold_tls(self, n, first):
        """Holder processes of this script (--hold), each from its own
        127.0.1.x address; they exit when their stdin closes."""
        procs = []
        for i, k in enumerate(self.split(n)):
            procs.append(subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--hold", str(k),
                 "--hold-port", str(self.c.mmp_imaps_port), "--hold-source",
                 f"127.0.1.{i + 1}", "--hold-first", str(first), "--hold-ca", self.c.cert],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
            first += k
        held = retries = 0
        for p in procs:
            line = p.stdout.readline()
            if not line.startswith("held"):
                p.wait(timeout=60)
                raise RuntimeError(f"holder failed: {line!r} (status {p.returncode})")
            words = line.split()
            held += int(words[1])
            retries += int(words[3])
        return procs, held, retries


class Reader:
    """Lines from a blocking socket (TLS or not)."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError(f"closed: {self.buf!r}")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def command(self, tag, text):
        """Send "tag text", read to the tagged reply; True for OK."""
        self.sock.sendall(f"{tag} {text}\r\n".encode())
        while True:
            line = self.line()
            if line.startswith(tag.encode() + b" "):
                return line[len(tag) + 1:].startswith(b"OK")


def hold_one(ctx, args, user):
    """TLS connect, greeting, LOGIN, SELECT INBOX, IDLE, "+": the socket."""
    s = socket.create_connection(("127.0.0.1", args.hold_port), timeout=60,
                                 source_address=(args.hold_source, 0))
    try:
        s = ctx.wrap_socket(s, server_hostname="localhost")
        r = Reader(s)
        if not r.line().startswith(b"* OK"):
            raise RuntimeError("no greeting")
        if not r.command("a", f'LOGIN "user{user}@{DOMAIN}" "secret{user}"'):
            raise RuntimeError(f"LOGIN user{user} refused")
        if not r.command("b", "SELECT INBOX"):
            raise RuntimeError("SELECT INBOX refused")
        s.sendall(b"c IDLE\r\n")
        line = r.line()
        if not line.startswith(b"+"):
            raise RuntimeError(f"IDLE: {line!r}")
        return s
    except BaseException:
        s.close()
        raise


def hold_main(args):
    """--hold N: N idle TLS IMAP sessions (users --hold-first ...); says
    "held N retries R", waits for stdin to close."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    ctx = ssl.create_default_context(cafile=args.hold_ca)
    socks, retries = [], 0
    while len(socks) < args.hold:
        try:
            socks.append(hold_one(ctx, args, args.hold_first + len(socks)))
        except (TimeoutError, ConnectionError, ssl.SSLError) as e:
            # A shared, loaded machine: try again (counted, reported).
            retries += 1
            if retries > 50:
                print(f"failed after {len(socks)}: {e}", flush=True)
                return 1
        except RuntimeError as e:
            print(f"refused after {len(socks)}: {e}", flush=True)
            return 1
    print(f"held {len(socks)} retries {retries}", flush=True)
    sys.stdin.read()
    return 0


def summary(res, args):
    lines = []
    r = res.get("rate")
    if r:
        runs, med, cpu = r["runs"], r["median_sessions_per_s"], r["median_cpu_ms_per_session"]
        lines.append(f"IMAP mix, {args.conc} clients, {args.duration} s a run, medians of "
                     f"{args.runs} runs (direct and MMP alternating)"
                     + (f"; the MMP alone on CPU {args.pin}, the rest on the others"
                        if args.pin is not None else "") + ":")
        lines.append("%-12s %11s  %-26s %19s %21s %21s" % (
            "path", "sessions/s", "runs", "MMP CPU ms/session", "store CPU ms/session",
            "slapd CPU ms/session"))
        for k, name in (("direct", "direct"), ("mmp", "through MMP")):
            lines.append("%-12s %11.1f  %-26s %19s %21.3f %21.3f" % (
                name, med[k], ", ".join(f"{v['sessions_per_s']:.1f}" for v in runs[k]),
                f"{cpu[k]['mmp']:.3f}" if "mmp" in cpu[k] else "-", cpu[k]["store"],
                cpu[k]["slapd"]))
        ratio = r["mmp_vs_direct"]
        lines.append(f"ratio MMP / direct: {ratio:.3f} ({(1 - ratio) * 100:.1f}% fewer "
                     f"sessions/s; target at most 15%): "
                     f"{'met' if ratio >= 0.85 else 'NOT met'}")
    r = res.get("idle")
    if r:
        lines.append("")
        lines.append(f"idle proxied IMAP sessions (LOGIN, SELECT INBOX, IDLE), N = "
                     f"{r['sessions']}" + (f" -- {r['note']}" if "note" in r else ""))
        lines.append("%-6s %16s %-24s %8s %18s" % ("kind", "MMP KiB/session", "MMP RSS KiB",
                                                 "target", "store KiB/session"))
        for kind, target in (("plain", 16), ("tls", 64)):
            v = r[kind]
            m = v["median_mmp_kib_per_session"]
            rss = v["runs"][-1]["mmp_rss_kib"]
            lines.append("%-6s %16.2f %-24s %8s %18.2f" % (
                kind, m, f"{rss[0]} -> {rss[1]}", f"<= {target}",
                v["median_store_kib_per_session"]) +
                ("  met" if m <= target else "  NOT met"))
        lines.append("(the store's figure is for reference; it is long-lived and the later "
                     "set reuses memory the first one freed)")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=8)
    ap.add_argument("--conc", type=int, default=16)
    ap.add_argument("--users", type=int, default=8000,
                    help="fresh users (filled mailboxes) per run and path")
    ap.add_argument("--idle", type=int, default=30000,
                    help="idle sessions (capped by the descriptor limit)")
    ap.add_argument("--idle-runs", type=int, default=1)
    ap.add_argument("--parts", default="rate,idle")
    ap.add_argument("--mmp-threads", type=int, default=2,
                    help="the MMP's worker threads ([mmp] threads; 2, as cluster up)")
    ap.add_argument("--pin", type=int, metavar="CPU",
                    help="rate: the MMP alone on this CPU, the client, the store and "
                    "slapd on the others (the MMP on a host of its own)")
    ap.add_argument("--prep", choices=("path", "direct"), default="path",
                    help="where each run's users log in once before it: by the path "
                    "the run measures (default), or directly to the store in both arms")
    ap.add_argument("--json", help="write the figures to this file")
    ap.add_argument("--hold", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--hold-port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--hold-source", help=argparse.SUPPRESS)
    ap.add_argument("--hold-first", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--hold-ca", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.hold:
        return hold_main(args)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    subprocess.run(["make", "-s", "-C", mtharness.builddir(), "bench/popstore-load"],
                   check=True)
    client = mtharness.binary("bench/popstore-load")
    command = "bench/mmp-imap.py " + " ".join(sys.argv[1:])
    log(f"# {command}; {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M:%S')}; "
        f"load {popbench.loadavg()}")
    parts = args.parts.split(",")
    with mtharness.Harness() as h:
        b = Bench(h, args, client)
        for part in ("rate", "idle"):
            if part in parts:
                getattr(b, "part_" + part)()
        if b.c.mmp is not None:
            b.c.mmp.stop()
        b.results["command"] = command
        if args.json:
            with open(args.json, "w") as f:
                json.dump(b.results, f, indent=1)
        print(summary(b.results, args))
        print(f"\ncommand: {command}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
