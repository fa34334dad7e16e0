#!/usr/bin/env python3
"""bench/imap-literal.py -- what a synchronizing literal costs (issue 37
item 19): APPEND from Python's imaplib, which keeps Nagle on and sends the
literal and its CRLF in two writes, so the CRLF waits until the server
has ACKed the literal. Linux delays that ACK up to 40 ms on a connection
where the server has just written (its "+" continuation); TCP_QUICKACK
after the continuation (lib-mail/conn.h: mt_conn_quickack) has it ACKed as
it is read.

    MT_BUILDDIR=$PWD/build bench/imap-literal.py [--runs 4] [--appends 40]
        [--size 2048] [--paths direct,mmp] [--json FILE]

Each run measures both arms on each path, one after the other (the order
alternates between runs: off, on, then on, off, ...): TCP_QUICKACK off
(MAILTIER_TCP_QUICKACK=no in the daemons' environment) and on (the
default), the store and the MMP restarted for each arm. Paths: "direct"
(imaplib to the store shard's imap_listen) and "mmp" (to mailtier-mmp's
imap_listen in front of it, plaintext LOGIN). An arm: LOGIN, 3 APPENDs
not timed, then --appends APPENDs of a --size byte message to INBOX, each
timed from the command to its tagged OK on the client; the arm's figure is
the median. Reported: each run's medians, and per path and arm the median
of the runs' medians (and their range).

The direct path's "on" figure needs the store's call after its "+ Ready
for literal data" (popstore/imap-session.c); without it both arms of the
direct path are the same. MT_POPSTORE=PATH runs another mailtier-popstore
binary. One shard (s1) on a real slapd (tests/integration/mmp_setup.py's
Cluster), one user; everything on 127.0.0.1, every wait bounded; needs
root (slapd) as the integration tests do.
"""

import argparse
import imaplib
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
for sub in ("tests/harness", "tests/integration"):
    sys.path.insert(0, os.path.join(TOP, sub))
import mtharness   # noqa: E402
import mmp_setup   # noqa: E402
import quickack_table   # noqa: E402

ENV = "MAILTIER_TCP_QUICKACK"
USER = f"lit1@{mmp_setup.DOMAIN}"
PASSWORD = "secret-lit1"


def log(text):
    print(text, file=sys.stderr, flush=True)


def message(size):
    head = (f"From: bench@{mmp_setup.DOMAIN}\r\nTo: {USER}\r\n"
            "Subject: literal\r\n\r\n").encode()
    line = b"x" * 70 + b"\r\n"
    body = line * ((size - len(head)) // len(line) + 1)
    return (head + body)[:size - 2] + b"\r\n"


class Bench:
    def __init__(self, h, args):
        self.args = args
        self.c = mmp_setup.Cluster(
            h, {USER: (PASSWORD, "s1")}, shards=("s1",), backend="popstore",
            popstore_settings={"allow_plaintext_auth": "yes", "stats_interval": "0"})
        self.msg = message(args.size)

    def restart(self, quickack):
        """The store and the MMP, with quickack on or off."""
        if quickack:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = "no"
        try:
            self.c.stop_shard("s1")
            self.c.start_shard("s1")
            self.c.start_mmp(allow_plaintext_auth="yes")
        finally:
            os.environ.pop(ENV, None)

    def arm(self, path):
        port = self.c.imap_port["s1"] if path == "direct" else self.c.mmp_imap_port
        m = imaplib.IMAP4("127.0.0.1", port, timeout=30)
        try:
            m.login(USER, PASSWORD)
            for _ in range(3):
                m.append("INBOX", None, None, self.msg)
            times = []
            for _ in range(self.args.appends):
                t0 = time.perf_counter()
                typ, data = m.append("INBOX", None, None, self.msg)
                times.append((time.perf_counter() - t0) * 1000)
                if typ != "OK":
                    raise RuntimeError(f"APPEND: {typ} {data}")
            m.logout()
        finally:
            try:
                m.shutdown()
            except OSError:
                pass
        return statistics.median(times)

    def run(self, i):
        order = (False, True) if i % 2 == 0 else (True, False)
        res = {}
        for quickack in order:
            self.restart(quickack)
            for path in self.args.paths:
                ms = self.arm(path)
                res[(path, quickack)] = ms
                log(f"  run {i + 1} {path:6s} quickack {'on ' if quickack else 'off'}: "
                    f"median {ms:.2f} ms per APPEND")
        return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--appends", type=int, default=40)
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--paths", default="direct,mmp")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args()
    args.paths = args.paths.split(",")
    if args.size < 200:
        ap.error("--size: at least 200")
    log(f"# bench/imap-literal.py {' '.join(sys.argv[1:])}; {os.cpu_count()} cores; "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')}; load {os.getloadavg()[0]:.2f}; "
        f"store {mmp_setup.popstore_binary()}")
    with mtharness.Harness() as h:
        b = Bench(h, args)
        runs = [b.run(i) for i in range(args.runs)]
    print(f"APPEND of {args.size} octets with a synchronizing literal (imaplib), "
          f"ms per APPEND, median of {args.appends} per run; {args.runs} runs")
    figures = {(path, q): [r[(path, q)] for r in runs]
               for path in args.paths for q in (False, True)}
    quickack_table.report("path", args.paths, figures, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
