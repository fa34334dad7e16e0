#!/usr/bin/env python3
"""mmp-load.py -- closed-loop POP3 sessions for bench/mmp (stdlib asyncio).

--conc clients each run sessions back to back: connect, greeting, USER,
PASS, STAT, RETR every message, DELE every message, QUIT (the SPECmail2001
POP session, as ../shared/peers/popload.py runs it for the Dovecot
baseline). Each session takes the next user of --users (no repeats); the
run ends after --duration seconds or when the users run out. A user's
port comes from --map (user -> port: direct to the user's store shard) or
is --port (everything through one proxy).

Prints one JSON object: sessions, errors (by kind), sessions_per_s,
messages, bytes, elapsed, session_ms (p50, p95), client_cpu_s.

    mmp-load.py --users FILE --port 1110 --conc 16 --duration 15
    mmp-load.py --users FILE --map MAP.json ...

--keep: RETR without DELE, users reused (relay throughput).
--users FILE: lines "address password". Loopback only. Benchmark code.
"""

import argparse
import asyncio
import json
import os
import sys
import time

KEEP = False    # --keep: RETR without DELE (relay throughput runs)


class Stats:
    def __init__(self):
        self.ok = 0
        self.errors = {}
        self.msgs = 0
        self.bytes = 0
        self.times = []


async def expect_ok(reader, what):
    line = await reader.readline()
    if not line.startswith(b"+OK"):
        raise RuntimeError(f"{what}: {line[:60]!r}")
    return line


async def session(host, port, source, user, password, st):
    t0 = time.monotonic()
    reader, writer = await asyncio.open_connection(
        host, port, local_addr=(source, 0) if source else None,
        limit=1 << 24)     # a whole RETR (up to 2.6 MB) in one readuntil
    try:
        await expect_ok(reader, "greeting")
        writer.write(f"USER {user}\r\n".encode())
        await expect_ok(reader, "USER")
        writer.write(f"PASS {password}\r\n".encode())
        await expect_ok(reader, "PASS")
        writer.write(b"STAT\r\n")
        n = int((await expect_ok(reader, "STAT")).split()[1])
        got = 0
        for i in range(1, n + 1):
            writer.write(f"RETR {i}\r\n".encode())
            data = await reader.readuntil(b"\r\n.\r\n")
            if not data.startswith(b"+OK"):
                raise RuntimeError(f"RETR: {data[:60]!r}")
            got += len(data)
        for i in range(1, n + 1 if not KEEP else 1):
            writer.write(f"DELE {i}\r\n".encode())
            await expect_ok(reader, "DELE")
        writer.write(b"QUIT\r\n")
        await expect_ok(reader, "QUIT")
        st.ok += 1
        st.msgs += n
        st.bytes += got
        st.times.append(time.monotonic() - t0)
    finally:
        writer.close()


async def worker(args, users, ports, st, end, idx, source, me):
    mine = users[me::args.conc] if KEEP else None
    n = 0
    while time.monotonic() < end:
        if KEEP:
            # Each client cycles through its own users: no [IN-USE].
            if not mine:
                return
            user, password = mine[n % len(mine)]
            n += 1
        else:
            i = idx[0]
            if i >= len(users):
                return
            idx[0] += 1
            user, password = users[i]
        port = ports.get(user, args.port) if ports else args.port
        try:
            await asyncio.wait_for(
                session("127.0.0.1", port, source, user, password, st), 60)
        except Exception as e:  # counted by kind, the run goes on
            k = type(e).__name__ + ": " + str(e)[:60]
            st.errors[k] = st.errors.get(k, 0) + 1


async def main_async(args):
    with open(args.users) as f:
        users = [tuple(l.split(" ", 1)) for l in f.read().splitlines() if l]
    users = [(u, p) for u, p in users]
    ports = None
    if args.map:
        with open(args.map) as f:
            ports = json.load(f)
    st = Stats()
    idx = [0]
    sources = [f"127.0.0.{2 + i % 8}" for i in range(args.conc)]
    c0 = os.times()
    t0 = time.monotonic()
    end = t0 + args.duration
    await asyncio.gather(*(worker(args, users, ports, st, end, idx, sources[i], i)
                           for i in range(args.conc)))
    el = time.monotonic() - t0
    c1 = os.times()
    times = sorted(st.times)

    def pct(p):
        return round(times[min(len(times) - 1, int(p / 100 * len(times)))] * 1000, 2) \
            if times else None
    return {"sessions": st.ok, "errors": sum(st.errors.values()),
            "error_kinds": st.errors, "elapsed_s": round(el, 2),
            "sessions_per_s": round(st.ok / el, 1), "messages": st.msgs,
            "bytes": st.bytes, "users_left": len(users) - idx[0],
            "session_ms": {"p50": pct(50), "p95": pct(95)},
            "client_cpu_s": round(c1.user - c0.user + c1.system - c0.system, 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", required=True)
    ap.add_argument("--port", type=int)
    ap.add_argument("--map")
    ap.add_argument("--conc", type=int, default=16)
    ap.add_argument("--duration", type=float, default=15)
    ap.add_argument("--keep", action="store_true",
                    help="no DELE; users may repeat (throughput of RETR)")
    args = ap.parse_args()
    global KEEP
    KEEP = args.keep
    if args.port is None and args.map is None:
        ap.error("--port or --map")
    print(json.dumps(asyncio.run(main_async(args))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
