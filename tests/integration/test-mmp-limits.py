#!/usr/bin/env python3
"""test-mmp-limits.py -- mailtier-mmp holding 10,000 concurrent idle
connections on loopback (conn_limit = 10000):

  * 9,999 idle clients, each greeted; a real login through to the store
    and a relayed STAT as the 10,000th connection, while they are held;
  * the 10,001st connection, plain and implicit TLS, gets
    "-ERR [SYS/TEMP] Too many connections, try again later." and EOF;
  * a slot freed is usable again; the process RSS grown per idle
    connection is printed and must stay under 16 KiB (the issue's target);
  * SIGTERM with 10,000 clients connected still exits 0 in time.

The test raises its own RLIMIT_NOFILE (soft to hard) and needs about
10,100 descriptors; it skips when the hard limit is lower. Bounded: about
15 s on a 2-core VM (60 s at most).
Environment: MT_BUILDDIR, MT_SRCDIR. Exits 0, 1, or 77 (no slapd, or too
few descriptors).
"""

import os
import resource
import socket
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
sys.path.insert(0, HERE)
import mtharness  # noqa: E402
import mmp_setup  # noqa: E402
from mmp_setup import raw, read_line  # noqa: E402

LIMIT = 10000
GREETING = b"+OK mailtier POP3 proxy ready.\r\n"
REFUSAL = "-ERR [SYS/TEMP] Too many connections, try again later."
BATCH = 250


def check(cond, what):
    if not cond:
        raise mtharness.HarnessError(what)
    print("ok   " + what, file=sys.stderr)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def open_idle(port, count, deadline):
    """count connections, each read up to its greeting, in batches."""
    socks = []
    while len(socks) < count:
        if time.monotonic() > deadline:
            raise mtharness.HarnessError(f"only {len(socks)} connections "
                                         "before the deadline")
        batch = [socket.create_connection(("127.0.0.1", port), timeout=20)
                 for _ in range(min(BATCH, count - len(socks)))]
        for s in batch:
            data = b""
            while not data.endswith(b"\r\n"):
                chunk = s.recv(64)
                if not chunk:
                    raise mtharness.HarnessError(
                        f"connection {len(socks)} closed: {data!r}")
                data += chunk
            if data != GREETING:
                raise mtharness.HarnessError(
                    f"connection {len(socks)}: {data!r}")
            socks.append(s)
    return socks


def test(h):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = LIMIT + 200
    if hard != resource.RLIM_INFINITY and hard < need:
        raise mtharness.Skip(f"RLIMIT_NOFILE hard limit {hard} < {need}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    deadline = time.monotonic() + 50

    c = mmp_setup.Cluster(h, {"alice@example.test": ("alice-pw", "s1")},
                          {"alice@example.test": ["Subject: x\n\nhi\n"]},
                          shards=("s1",))
    mmp = c.start_mmp(conn_limit=LIMIT, conn_limit_per_client=2 * LIMIT,
                      login_timeout="5m", threads=2)
    time.sleep(0.2)
    rss0 = rss_kib(mmp.pid)

    t0 = time.monotonic()
    socks = open_idle(c.mmp_port, LIMIT - 1, deadline)
    took = time.monotonic() - t0
    time.sleep(0.5)
    rss1 = rss_kib(mmp.pid)
    per_conn = (rss1 - rss0) * 1024 / len(socks)
    print(f"{len(socks)} idle connections in {took:.1f} s; MMP RSS "
          f"{rss0} KiB -> {rss1} KiB: {per_conn:.0f} bytes per idle connection",
          file=sys.stderr)
    check(per_conn < 16 * 1024, f"under 16 KiB per idle connection "
          f"({per_conn / 1024:.1f} KiB)")

    # The 10,000th: a real login, relayed to the store, while all are held.
    p = c.login("alice@example.test")
    check(p.stat()[0] == 1, "login and relay work with 9,999 idle clients")

    # Beyond conn_limit: plain, then implicit TLS.
    s = raw(c.mmp_port)
    line = read_line(s)
    check(line == REFUSAL, f"connection 10,001 (plain): {line!r}")
    check(s.recv(16) == b"", "closed after the answer")
    s.close()
    t = c.ctx.wrap_socket(raw(c.mmps_port), server_hostname="localhost")
    line = read_line(t)
    check(line == REFUSAL, f"connection 10,001 (pop3s): {line!r}")
    t.close()

    # A slot freed is used again.
    p.quit()
    admitted = False
    for _ in range(100):
        s = raw(c.mmp_port)
        admitted = read_line(s).startswith("+OK")
        s.close()
        if admitted:
            break
        time.sleep(0.05)
    check(admitted, "admitted again once a connection closed")
    mmp.wait_log(r"refused client=127\.0\.0\.1:\d+ listener=pop3 reason=conn_limit")

    # SIGTERM with 10,000 connected: each is told, exit 0 in time.
    took = mmp.stop(timeout=20)
    check(took < 10, f"drained 10,000 idle clients in {took:.1f} s")
    for s in socks:
        s.close()
    check(time.monotonic() < deadline + 10, "within the time bound")


if __name__ == "__main__":
    mtharness.main(test)
