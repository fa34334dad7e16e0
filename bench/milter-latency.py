#!/usr/bin/env python3
"""bench/milter-latency.py -- what a filter that modifies the message adds
to DATA -> 250 (issue 37 item 19): libmilter writes each reply packet with
its own write(2), Nagle on, so the answer after a modification waited for
the MTA's ACK of the modification, which Linux delays up to 40 ms on a
connection the MTA has just written to. The milter client sets
TCP_QUICKACK once each of its packets is written (lib-mail/milter-client.c).

    MT_BUILDDIR=$PWD/build bench/milter-latency.py [--runs 4] [--messages 30]
        [--filters none,script,opendkim] [--json FILE]

Filters (each on its own inet socket on 127.0.0.1, the MTA's only
smtpd_milters entry):
  none      no filter: the MTA's own DATA -> 250 (durable queue), the floor;
  script    tests/integration/milter_script.py, a Python milter that adds
            one header at end of body, each packet in its own sendall()
            with Nagle on, as libmilter writes them;
  opendkim  Debian's opendkim (libmilter) in sign mode for example.test,
            loopback clients internal (tests/integration/filters.py: its
            DNS an unbound of the test's own zones): adds Authentication-
            Results and DKIM-Signature to every message.
Arms per filter and run, one after the other (the order alternates between
runs): TCP_QUICKACK off (MAILTIER_TCP_QUICKACK=no in the MTA's environment)
and on (the default), the MTA restarted for each arm. An arm: 3 messages
not timed, then --messages messages (1 KiB, From example.test, to a local
user on an LMTP stand-in shard) over one SMTP session, each timed from the
end of its data to the 250 on the client (smtplib); the arm's figure is
the median. Reported: per filter and arm the median of the runs' medians.
Needs root (slapd) as the integration tests do; opendkim and unbound for
that filter.
"""

import argparse
import os
import smtplib
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
for sub in ("tests/harness", "tests/integration"):
    sys.path.insert(0, os.path.join(TOP, sub))
import mtharness       # noqa: E402
import mta_setup       # noqa: E402
import milter_script   # noqa: E402
import quickack_table   # noqa: E402

ENV = "MAILTIER_TCP_QUICKACK"
RCPT = f"alice@{mta_setup.DOMAIN}"


def log(text):
    print(text, file=sys.stderr, flush=True)


def message(i):
    head = (f"From: <bench@{mta_setup.DOMAIN}>\r\nTo: <{RCPT}>\r\n"
            f"Subject: milter {i}\r\nMessage-ID: <b{i}@{mta_setup.DOMAIN}>\r\n"
            "Date: Mon, 07 Dec 2026 10:00:00 +0000\r\n\r\n")
    return head + ("x" * 70 + "\r\n") * 14


class Bench:
    def __init__(self, h, args):
        self.h = h
        self.args = args
        self.env = mta_setup.MtaEnv(h, shards=("s1",), mta_options={
            "mynetworks": "127.0.0.1/32", "milter_content_timeout": "10s"})
        self.env.add_user(RCPT, "s1")
        self.starts = 0

    def configure(self, address):
        env = self.env
        env.options["smtpd_milters"] = "f1" if address else ""
        env.write_config()
        if address:
            with open(env.conf, "a") as f:
                f.write(f"\n[milter.f1]\naddress = {address}\n")

    def arm(self, quickack):
        if self.env.mta is not None:
            self.env.mta.stop()
        self.starts += 1
        self.env.start_mta(name=f"mta-{self.starts}",
                           env={} if quickack else {ENV: "no"})
        s = smtplib.SMTP("127.0.0.1", self.env.smtp_port, timeout=30)
        times = []
        try:
            s.ehlo("bench.example.test")
            for i in range(3 + self.args.messages):
                s.mail(f"bench@{mta_setup.DOMAIN}")
                s.rcpt(RCPT)
                s.putcmd("data")
                code, _ = s.getreply()
                if code != 354:
                    raise RuntimeError(f"DATA: {code}")
                data = dot_stuff(message(i)).encode() + b"\r\n.\r\n"
                s.send(data)
                t0 = time.perf_counter()
                code, text = s.getreply()
                if code != 250:
                    raise RuntimeError(f"end of data: {code} {text!r}")
                if i >= 3:
                    times.append((time.perf_counter() - t0) * 1000)
            s.quit()
        finally:
            s.close()
        return statistics.median(times)


def dot_stuff(text):
    """Dot-stuffing (RFC 5321 4.5.2); our messages have no leading dots."""
    return text.replace("\r\n.", "\r\n..")


def run_filter(h, b, name, args, results):
    def measure(address):
        b.configure(address)
        for r in range(args.runs):
            order = (False, True) if r % 2 == 0 else (True, False)
            for quickack in order:
                ms = b.arm(quickack)
                results.setdefault((name, quickack), []).append(ms)
                log(f"  run {r + 1} {name:8s} quickack {'on ' if quickack else 'off'}: "
                    f"median {ms:.2f} ms DATA end -> 250")

    if name == "none":
        measure(None)
    elif name == "script":
        script = milter_script.Script(mods=[milter_script.add_header("X-Scanned", "yes")])
        with milter_script.MilterServer(script) as m:
            measure(m.address)
    elif name == "opendkim":
        import filters
        with filters.DnsServer(h) as dns, \
                filters.OpenDkim(h, dns, internal_hosts="127.0.0.1") as dkim:
            measure(dkim.milter_address)
    else:
        raise SystemExit(f"unknown filter {name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--messages", type=int, default=30)
    ap.add_argument("--filters", default="none,script,opendkim")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args()
    names = args.filters.split(",")
    log(f"# bench/milter-latency.py {' '.join(sys.argv[1:])}; {os.cpu_count()} cores; "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')}; load {os.getloadavg()[0]:.2f}")
    results = {}
    with mtharness.Harness() as h:
        b = Bench(h, args)
        for name in names:
            run_filter(h, b, name, args, results)
        if b.env.mta is not None:
            b.env.mta.stop()
    print(f"DATA end -> 250 with one filter, ms, median of {args.messages} messages "
          f"per run; {args.runs} runs")
    quickack_table.report("filter", names, results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
