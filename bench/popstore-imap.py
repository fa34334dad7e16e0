#!/usr/bin/env python3
"""bench/popstore-imap.py -- mailtier-popstore's IMAP server against
Dovecot's imapd (issue 15's benchmark): sessions/s and server CPU per
session of a session mix, and memory per idle (IDLE) session.

    MT_BUILDDIR=$PWD/build bench/popstore-imap.py [--runs 3] [--duration 10]
        [--users 3000] [--idle 10000] [--dovecot-idle 1000] [--no-dovecot]

The mix (bench/popstore-load imap, 16 clients, one command at a time, each
session on the next unused user whose INBOX holds 4 messages of ~24 KB):
LOGIN, SELECT INBOX, FETCH 1:* (FLAGS ENVELOPE), FETCH 1:2 BODY.PEEK[],
STORE 1:2 +FLAGS.SILENT (\\Seen), MOVE 1 Archive, STORE 1 +FLAGS.SILENT
(\\Deleted), EXPUNGE, LOGOUT. Before each run the slice's mailboxes are
filled over LMTP and each user logs in once (CREATE Archive: the first
login's own work, Dovecot's maildir and the store's special-use folders,
is not measured). Server CPU is the daemon's (mailtier: the one process;
Dovecot: the master and every process under it, reaped ones included),
over the run, divided by the sessions; slapd is not counted for either.

Idle: --idle sessions (Dovecot: --dovecot-idle; without hibernation each
is an imap process) log in, SELECT INBOX and IDLE; the server's memory
(proportional set size, summed over its processes) with them, minus
before them, per session.

Dovecot runs as ../shared/peers (untuned) and ../shared/peers-tuned with
dovecot-imapd added, IMAP on a free port: both get the process and client
limits the session counts need; the tuned one also the high-performance
imap-login (service_count = 0, as its pop3-login has) and
imap_hibernate_timeout (Dovecot's documented way to hold idle clients).
Needs root and the Debian packages dovecot-imapd, dovecot-lmtpd,
dovecot-pop3d, dovecot-ldap, slapd. Everything on 127.0.0.1, every wait
bounded.
"""

import argparse
import importlib.util
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("popbench", os.path.join(HERE, "popstore.py"))
popbench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(popbench)
import mtharness      # noqa: E402  (on the path popstore.py set)
import popstorelib    # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_tree(root):
    """root and every process under it."""
    children = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(pid))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def tree_cpu(root):
    """CPU seconds of root's tree, reaped children included."""
    total = 0
    for pid in proc_tree(root):
        try:
            f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in f[11:15])   # utime stime cutime cstime
    return total / CLK_TCK


def tree_pss_kib(root):
    total = 0
    for pid in proc_tree(root):
        try:
            for line in open(f"/proc/{pid}/smaps_rollup"):
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def mix_runs(args, client, name, root, imap, lmtp, fmt_lmtp, fmt_login, first0):
    """The session mix --runs times: (sessions/s, CPU ms per session) each."""
    rates, cpus = [], []
    for run in range(args.runs):
        first = first0 + run * args.users
        popbench.load(client, "lmtp", "--port", lmtp, "--conc", 32, "--per-user", 4,
                      "--size", 24576, "--first", first, "--count", args.users, *fmt_lmtp)
        popbench.load(client, "imap-prep", "--port", imap, "--conc", 16, "--duration", 600,
                      "--first", first, "--count", args.users, *fmt_login)
        la = popbench.loadavg()
        c0 = tree_cpu(root)
        out = popbench.load(client, "imap", "--port", imap, "--conc", 16, "--duration",
                            args.duration, "--first", first, "--count", args.users,
                            *fmt_login)
        c1 = tree_cpu(root)
        ok = int(out["ok"])
        rates.append(float(out["per_s"]))
        cpus.append((c1 - c0) * 1000 / max(1, ok))
        steps = " ".join(f"{k[:-3]}={out[k]}" for k in out if k.endswith("_ms") and
                         not k.startswith("p"))
        print(f"{name} imap conc=16 run={run + 1}: {out['per_s']}/s p50={out['p50_ms']} ms "
              f"p95={out['p95_ms']} ms errors={out['errors']} cpu/session="
              f"{cpus[-1]:.2f} ms load={la} ({steps})", flush=True)
        if ok >= args.users:
            print("# warning: every prepared mailbox was used; raise --users", flush=True)
    return popbench.median(rates), popbench.median(cpus)


def idle_memory(client, name, root, imap, count, first, fmt_login):
    """KiB of server memory per idle session, count sessions."""
    before = tree_pss_kib(root)
    p = subprocess.Popen([client, "imap-idle", "--port", str(imap), "--conc", str(count),
                          "--duration", "20", "--first", str(first), "--count", str(count),
                          *fmt_login], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    idle = int(line.split("=")[1]) if line.startswith("idle=") else 0
    time.sleep(8)       # hibernation and allocator settling
    during = tree_pss_kib(root)
    p.wait(timeout=600)
    per = (during - before) / max(1, idle)
    print(f"{name} idle: {idle} of {count} sessions idle, server PSS {before} -> {during} KiB, "
          f"{per:.1f} KiB per session", flush=True)
    return per, idle


def bench_mailtier(h, args, client):
    users = args.users * args.runs + args.idle
    env = popstorelib.Env(h, shards=("s1",), popstore_extra=(
        f"max_sessions = {args.idle + 1000}\nidle_timeout = 30m\nstats_interval = 0\n"
        "allow_plaintext_auth = yes\n"))
    h.ctl("directory", "down", "--dir", env.dir)
    h.ctl("users", "bulk", "--count", users, "--shards", "s1", "--hash", "ssha512",
          config=env.conf)
    h.ctl("directory", "up", "--dir", env.dir, "--port", env.ds["port"])
    d = env.start("s1")
    root = d.proc.pid
    imap, lmtp = env.ports["s1"]["imap"], env.ports["s1"]["lmtp"]
    rate, cpu = mix_runs(args, client, "mailtier", root, imap, lmtp, [], [], 1)
    first = 1 + args.users * args.runs
    # a warm-up of idle sessions first: caches and allocator arenas
    idle_memory(client, "mailtier (warm-up)", root, imap, 200, first, [])
    per, n = idle_memory(client, "mailtier", root, imap, args.idle, first, [])
    d.stop()
    return {"rate": rate, "cpu": cpu, "idle_kib": per, "idle_n": n}


DOVECOT_LIMITS = """
default_process_limit = {procs}
default_client_limit = {clients}
service imap {{
  process_limit = {procs}
{imap_tuned}}}
"""

# TUNED: the imap processes reused and pre-forked as the peers' pop3 ones
# are (all users share uid vmail).
DOVECOT_IMAP_TUNED = """  service_count = 100
  process_min_avail = 4
"""

DOVECOT_TUNED = """
# TUNED (bench/popstore-imap.py): idle clients handed to imap-hibernate
imap_hibernate_timeout = 5s
service imap-hibernate {
  unix_listener imap-hibernate {
    mode = 0666
  }
}
"""


def bench_dovecot(args, client, variant):
    idle = args.dovecot_idle_tuned if variant == "peers-tuned" else args.dovecot_idle
    users = args.users * args.runs + idle
    tuned = variant == "peers-tuned"
    extra = DOVECOT_LIMITS.format(procs=idle + 500, clients=2 * idle + 2000,
                                  imap_tuned=DOVECOT_IMAP_TUNED.rstrip("\n") +
                                  "\n  unix_listener imap-master {\n    mode = 0666\n  }\n"
                                  if tuned else "")
    if variant == "peers-tuned":
        extra += DOVECOT_TUNED
    try:
        dv = popbench.Dovecot(variant, 1000 + users, imap=True, extra=extra)
    except (OSError, subprocess.CalledProcessError, RuntimeError) as e:
        print(f"# {variant}: could not start Dovecot, skipped: {e}")
        return None
    if variant == "peers-tuned":
        conf = os.path.join(dv.v, "conf", "dovecot", "dovecot.conf")
        text = open(conf).read().replace(
            "service imap-login {\n", "service imap-login {\n  # TUNED: as pop3-login\n"
            "  service_count = 0\n  process_min_avail = 2\n", 1)
        open(conf, "w").write(text)
        subprocess.run(["doveadm", "-c", conf, "reload"], check=True)
        time.sleep(2)
    name = f"dovecot ({variant})"
    width = max(4, len(str(1000 + users - 1)))
    fmt_lmtp = ["--user-format", f"user%0{width}lu@bench.test",
                "--password-format", f"pw%0{width}lu"]
    fmt_login = ["--user-format", f"user%0{width}lu", "--password-format", f"pw%0{width}lu"]
    try:
        pidfile = os.path.join(dv.v, "run/dovecot/master.pid")
        for _ in range(100):
            if os.path.exists(pidfile):
                break
            time.sleep(0.1)
        else:
            log = open(os.path.join(dv.v, "log", "dovecot.log"), errors="replace").read()
            raise RuntimeError(f"{variant}: no master.pid; log: {log[-2000:]}")
        root = int(open(pidfile).read().split()[0])
        rate, cpu = mix_runs(args, client, name, root, dv.imap, dv.lmtp, fmt_lmtp,
                             fmt_login, 1000)
        first = 1000 + args.users * args.runs
        idle_memory(client, f"{name} (warm-up)", root, dv.imap, 50, first, fmt_login)
        per, n = idle_memory(client, name, root, dv.imap, idle, first, fmt_login)
        errors = [l for l in open(os.path.join(dv.v, "log", "dovecot.log"), errors="replace")
                  if "rror" in l or "atal" in l]
        for line in errors[:5]:
            print(f"# {name} log: {line.rstrip()}", flush=True)
    finally:
        dv.stop()
    return {"rate": rate, "cpu": cpu, "idle_kib": per, "idle_n": n}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--users", type=int, default=3000, help="mailboxes filled per run")
    ap.add_argument("--idle", type=int, default=10000, help="idle sessions (mailtier)")
    ap.add_argument("--dovecot-idle", type=int, default=1000,
                    help="idle sessions for untuned Dovecot (an imap process each)")
    ap.add_argument("--dovecot-idle-tuned", type=int, default=10000,
                    help="idle sessions for tuned Dovecot (hibernated)")
    ap.add_argument("--no-dovecot", action="store_true")
    args = ap.parse_args()
    # Each side of an idle session holds a descriptor: the client and the
    # server are separate processes, each within the hard limit.
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and max(args.idle, args.dovecot_idle_tuned) + 2000 > hard:
        sys.exit(f"--idle needs a descriptor limit above {hard} (ulimit -Hn)")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    subprocess.run(["make", "-s", "-C", mtharness.builddir(), "bench/popstore-load"],
                   check=True)
    client = mtharness.binary("bench/popstore-load")
    print(f"# bench/popstore-imap.py --runs {args.runs} --duration {args.duration} "
          f"--users {args.users} --idle {args.idle}; {os.cpu_count()} cores; "
          f"{time.strftime('%Y-%m-%d %H:%M:%S')}", flush=True)
    results = {}
    with mtharness.Harness() as h:
        results["mailtier-popstore"] = bench_mailtier(h, args, client)
    if not args.no_dovecot:
        for variant in ("peers", "peers-tuned"):
            r = bench_dovecot(args, client, variant)
            if r is not None:
                results[f"dovecot ({variant})"] = r
    print(f"\n# medians of {args.runs} runs")
    print("%-26s %12s %16s %18s" % ("system", "sessions/s", "cpu ms/session",
                                    "KiB/idle session"))
    for name, r in results.items():
        print("%-26s %12.1f %16.2f %12.1f (%d)" % (name, r["rate"], r["cpu"], r["idle_kib"],
                                                   r["idle_n"]))
    ours = results["mailtier-popstore"]
    dov = [r for n, r in results.items() if n.startswith("dovecot")]
    if dov:
        best_rate = max(r["rate"] for r in dov)
        best_cpu = min(r["cpu"] for r in dov)
        print(f"\nratios: sessions/s {ours['rate'] / best_rate:.2f}x the better Dovecot "
              f"(target >= 2), CPU/session {ours['cpu'] / best_cpu:.2f}x the leaner "
              f"(target <= 0.5); idle {ours['idle_kib']:.1f} KiB/session (target <= 32)")


if __name__ == "__main__":
    main()
