#!/usr/bin/env python3
"""mta-load.py -- open-loop SMTP load for bench/mta.py (loopback only).

The session shape, arrival process and size table of the reference set-up's
client (../shared/peers/smtpload.py, used for the Postfix + Dovecot figure)
so both systems see the same load: one session per message (EHLO, MAIL,
RCPT local, RCPT remote, DATA, QUIT), Poisson arrivals at --rate msgs/min,
sizes from 1 KB to 2.6 MB with a ~24 KB mean. Differences: local recipients
are userK@DOMAIN, K = 1..--users (mailtierctl users bulk's naming), and
--procs splits the rate over several processes so the Python client is not
the bottleneck. Prints one JSON line: achieved rate, DATA response time
(final "." to 250: avg/p50/p95/p99/max), session time, errors, client CPU,
and (open loop) how late sessions started against their Poisson schedule
("lag_ms": a worker pool that cannot keep up with a slow server shows here,
not in the DATA time) and how long the whole load took ("wall_s": the last
arrival plus the tail of sessions still open then).

  mta-load.py --port P --rate 12000 --duration 30 [--procs 2] [--users 1000]
  mta-load.py --port P --sessions 32 --duration 30     (closed loop: each
      session sends its next message as soon as the last got its 250)
"""
import argparse
import json
import multiprocessing
import os
import queue
import random
import socket
import threading
import time

DIST = [(1024, .285), (2048, .20), (4096, .15), (8192, .12), (16384, .09),
        (32768, .06), (65536, .045), (131072, .03), (262144, .012),
        (524288, .005), (1048576, .001), (2662400, .002)]
LINE = (b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 the "
        b"quick brown fox jumps over\r\n")
BIG = LINE * (2662400 // len(LINE) + 2)


def reply(f):
    lines = []
    while True:
        line = f.readline()
        if not line:
            raise IOError("eof")
        lines.append(line)
        if line[3:4] != b"-":
            return int(line[:3]), lines


def body(n, i, lrc, rrc):
    hdr = (f"From: <load@client.test>\r\nTo: {', '.join(lrc + rrc)}\r\n"
           f"Subject: bench {i}\r\nMessage-ID: <{i}.{os.getpid()}@client.test>"
           "\r\n\r\n").encode()
    k = max(0, n - len(hdr))
    k -= k % len(LINE)
    return hdr + BIG[:k] + b".\r\n"


def send(a, i, n, lrc, rrc):
    t0 = time.monotonic()
    s = socket.create_connection((a.host, a.port), timeout=60)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    f = s.makefile("rb")
    try:
        def cmd(c, want):
            s.sendall(c)
            code, lines = reply(f)
            if code != want:
                raise IOError("%s -> %r" % (c[:10], lines[-1][:60]))
        code, _ = reply(f)
        if code != 220:
            raise IOError("banner %d" % code)
        cmd(b"EHLO client.test\r\n", 250)
        cmd(b"MAIL FROM:<load@client.test>\r\n", 250)
        for r in lrc + rrc:
            cmd(b"RCPT TO:<%s>\r\n" % r.encode(), 250)
        cmd(b"DATA\r\n", 354)
        b = body(n, i, lrc, rrc)
        s.sendall(b[:-3])
        td = time.monotonic()
        s.sendall(b".\r\n")
        code, lines = reply(f)
        t1 = time.monotonic()
        if code != 250:
            raise IOError("data %r" % lines[-1][:60])
        try:
            s.sendall(b"QUIT\r\n")
            reply(f)
        except Exception:
            pass
        return t1 - td, time.monotonic() - t0, len(b)
    finally:
        f.close()
        s.close()


def plan(a, rnd, sizes, weights):
    n = a.fixed_size or rnd.choices(sizes, weights)[0]
    lrc = ["user%d@%s" % (rnd.randint(1, a.users), a.domain) for _ in range(a.local_rcpts)]
    rrc = ["r%d@%s" % (rnd.randrange(100000), a.remote_domain) for _ in range(a.remote_rcpts)]
    return n, lrc, rrc


def closed_loop(a, index, rnd, sizes, weights, stats, lock, t0):
    """a.sessions / a.procs clients, each sending back to back."""
    def client(k):
        r = random.Random(rnd.random() + k)
        i = 0
        while time.monotonic() - t0 < a.duration:
            n, lrc, rrc = plan(a, r, sizes, weights)
            try:
                drt, srt, nb = send(a, (index * 1000 + k) * 100000 + i, n, lrc, rrc)
                with lock:
                    stats["ok"] += 1
                    stats["bytes"] += nb
                    stats["data"].append(drt)
                    stats["sess"].append(srt)
            except Exception as e:
                with lock:
                    stats["err"] += 1
                    key = str(e)[:80]
                    stats["errors"][key] = stats["errors"].get(key, 0) + 1
            i += 1
    n = max(1, a.sessions // a.procs)
    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(a.duration + 120)


def run_one(a, index, out):
    rnd = random.Random((a.seed or time.time_ns()) + index)
    sizes, weights = zip(*DIST)
    stats = {"ok": 0, "err": 0, "bytes": 0, "data": [], "sess": [], "errors": {},
             "lag": [], "planned": 0}
    lock = threading.Lock()
    q = queue.Queue()

    def worker():
        while True:
            item = q.get()
            if item is None:
                return
            due, item = item
            with lock:
                stats["lag"].append(time.monotonic() - due)
            try:
                drt, srt, nb = send(a, *item)
                with lock:
                    stats["ok"] += 1
                    stats["bytes"] += nb
                    stats["data"].append(drt)
                    stats["sess"].append(srt)
            except Exception as e:
                with lock:
                    stats["err"] += 1
                    k = str(e)[:80]
                    stats["errors"][k] = stats["errors"].get(k, 0) + 1

    c0 = os.times()
    t0 = time.monotonic()
    if a.sessions:
        closed_loop(a, index, rnd, sizes, weights, stats, lock, t0)
        c1 = os.times()
        stats["gen_s"] = stats["wall_s"] = time.monotonic() - t0
        stats["planned"] = stats["ok"] + stats["err"]
        stats["cpu"] = (c1.user - c0.user) + (c1.system - c0.system)
        out.put(stats)
        return
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(a.threads)]
    for t in threads:
        t.start()
    nxt, i = t0, 0
    lam = a.rate / a.procs / 60.0
    while True:
        nxt += rnd.expovariate(lam)
        if nxt - t0 > a.duration:
            break
        d = nxt - time.monotonic()
        if d > 0:
            time.sleep(d)
        n = a.fixed_size or rnd.choices(sizes, weights)[0]
        lrc = ["user%d@%s" % (rnd.randint(1, a.users), a.domain)
               for _ in range(a.local_rcpts)]
        rrc = ["r%d@%s" % (rnd.randrange(100000), a.remote_domain)
               for _ in range(a.remote_rcpts)]
        q.put((nxt, (index * 10_000_000 + i, n, lrc, rrc)))
        i += 1
    stats["planned"] = i
    gen_end = time.monotonic()
    for _ in threads:
        q.put(None)
    for t in threads:
        t.join(timeout=120)
    stats["wall_s"] = time.monotonic() - t0
    c1 = os.times()
    stats["gen_s"] = gen_end - t0
    stats["cpu"] = (c1.user - c0.user) + (c1.system - c0.system)
    out.put(stats)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--rate", type=float, default=0, help="messages per minute (open loop)")
    ap.add_argument("--sessions", type=int, default=0,
                    help="closed loop: this many concurrent sessions instead of --rate")
    ap.add_argument("--duration", type=float, default=30)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=64)
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--domain", default="bench.test")
    ap.add_argument("--remote-domain", default="remote.test")
    ap.add_argument("--local-rcpts", type=int, default=1)
    ap.add_argument("--remote-rcpts", type=int, default=1)
    ap.add_argument("--fixed-size", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    assert a.host.startswith("127."), "loopback only"
    assert (a.rate > 0) != (a.sessions > 0), "give --rate or --sessions"
    out = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=run_one, args=(a, k, out))
             for k in range(a.procs)]
    for p in procs:
        p.start()
    parts = [out.get() for _ in procs]
    for p in procs:
        p.join()
    data = sorted(x for s in parts for x in s["data"])
    lag = sorted(x for s in parts for x in s["lag"])
    sess = sorted(x for s in parts for x in s["sess"])
    ok = sum(s["ok"] for s in parts)
    gen = max(s["gen_s"] for s in parts)

    def pct(v, p):
        return round(v[min(len(v) - 1, int(p / 100.0 * len(v)))] * 1000, 1) if v else None

    def avg(v):
        return round(sum(v) / len(v) * 1000, 1) if v else None
    errors = {}
    for s in parts:
        for k, n in s["errors"].items():
            errors[k] = errors.get(k, 0) + n
    print(json.dumps({
        "target_rate_per_min": a.rate, "duration_s": a.duration, "ok": ok,
        "err": sum(s["err"] for s in parts), "errors": errors,
        "achieved_rate_per_min": round(ok / gen * 60, 1) if gen else 0,
        "mean_msg_bytes": round(sum(s["bytes"] for s in parts) / max(1, ok)),
        "data_rt_ms": {"avg": avg(data), "p50": pct(data, 50), "p95": pct(data, 95),
                       "p99": pct(data, 99), "max": pct(data, 100)},
        "session_ms": {"avg": avg(sess), "p95": pct(sess, 95)},
        "lag_ms": {"avg": avg(lag), "p95": pct(lag, 95), "max": pct(lag, 100)},
        "planned": sum(s["planned"] for s in parts),
        "wall_s": round(max(s["wall_s"] for s in parts), 2),
        "loadgen_cpu_s": round(sum(s["cpu"] for s in parts), 2)}))


if __name__ == "__main__":
    main()
