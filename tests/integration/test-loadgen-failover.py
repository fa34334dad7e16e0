#!/usr/bin/env python3
"""test-loadgen-failover.py -- mailtier-load against several addresses of a
service, as clients of several servers (MX records, several A records,
several MTAs and MMPs: issue #40 item 3) use them: each session starts at
the next address in turn and, when its connect fails, goes on to the
following one; the connect step's time is all of it.

Against a real SMTP + POP3 server (minimail.py) with, before it in each
list:
  (a) a loopback port nothing listens on (refused): every session still
      succeeds, none fails, QoS met;
  (b) a silent server (a listener whose accept queue is full: the kernel
      drops the SYNs, as for a host cut off without FIN) with
      --connect-timeout 1: every session succeeds; half of them start at
      the silent one and pay the second, so the SMTP connect step's p95 is
      at least 1 s;
  (c) only dead addresses: every session fails, as a connect error.
Bad lists are refused (exit 3, a set-up error, saying why): more than 8
addresses, an empty one.

Trust boundary: test code only."""

import json
import os
import socket
import subprocess
import sys
import time

import mtharness


def start_minimail(h):
    ready = os.path.join(h.tmpdir, "ready.json")
    sink = mtharness.free_port()
    p = subprocess.Popen([sys.executable, os.path.join(os.environ.get("MT_SRCDIR", "."),
                                                       "tests", "integration", "minimail.py"),
                          "--users", "20", "--domain", "example.test",
                          "--relay-domain", "remote.test", "--relay", f"127.0.0.1:{sink}",
                          "--ready", ready])
    h.add_cleanup(lambda: (p.terminate(), p.wait(timeout=30)))
    deadline = time.monotonic() + 15
    while not (os.path.exists(ready) and os.path.getsize(ready) > 0):
        assert time.monotonic() < deadline, "minimail did not start"
        time.sleep(0.1)
    ports = json.load(open(ready))
    return ports["smtp"], ports["pop"], sink


def silent_listener(h):
    """A listening socket whose accept queue is full: further SYNs are
    dropped, so a connect to it is never answered."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    port = srv.getsockname()[1]
    held = []
    for _ in range(3):
        c = socket.socket()
        c.setblocking(False)
        c.connect_ex(("127.0.0.1", port))
        held.append(c)
    time.sleep(0.2)
    h.add_cleanup(lambda: [s.close() for s in held + [srv]])
    return port


def run(h, name, smtp, pop, sink, extra=(), expect_rc=0):
    report = os.path.join(h.tmpdir, name)
    argv = [mtharness.binary("loadgen/mailtier-load"), "run", "--smtp", smtp, "--pop", pop,
            "--sink-listen", f"127.0.0.1:{sink}", "--users", "20", "--rate", "400",
            "--domain", "example.test", "--remote-domain", "remote.test", "--levels", "100",
            "--warmup", "1", "--duration", "6", "--cooldown", "15", "--step-timeout", "15",
            "--seed", "5", "--probe-interval", "1", "--progress", "0", "--workers", "1",
            "--report", report, *extra]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    assert p.returncode == expect_rc, f"{name}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    if expect_rc == 3:
        return p
    return json.load(open(os.path.join(report, "results.json")))


def test(h):
    smtp, pop, sink = start_minimail(h)
    dead, dead2 = mtharness.free_ports(2)

    # (a) a refused address before the live one, in each list.
    r = run(h, "refused", f"127.0.0.1:{dead},127.0.0.1:{smtp}",
            f"127.0.0.1:{dead},127.0.0.1:{pop}", sink)
    t = r["totals"]
    assert t["sessions_failed"] == 0, t
    assert t["sessions_attempted"] > 20, t
    assert all(lv["qos_met"] for lv in r["levels"]), r["levels"]
    print(f"refused first: {t['sessions_attempted']} sessions, none failed")

    # (b) a silent address first: the sessions starting there wait 1 s.
    silent = silent_listener(h)
    r = run(h, "silent", f"127.0.0.1:{silent},127.0.0.1:{smtp}",
            f"127.0.0.1:{silent},127.0.0.1:{pop}", sink, extra=("--connect-timeout", "1"))
    t = r["totals"]
    assert t["sessions_failed"] == 0, t
    fn = t["functions"]["smtp_connect"]
    assert fn["fail"] == 0 and fn["p95_ms"] >= 1000 and fn["p50_ms"] < 1500, fn
    print(f"silent first: {t['sessions_attempted']} sessions, none failed; SMTP connect "
          f"p50 {fn['p50_ms']:.0f} ms, p95 {fn['p95_ms']:.0f} ms, max {fn['max_ms']:.0f} ms")

    # (c) nothing alive: every session fails at its connect.
    r = run(h, "dead", f"127.0.0.1:{dead},127.0.0.1:{dead2}",
            f"127.0.0.1:{dead},127.0.0.1:{dead2}", sink, expect_rc=1)
    t = r["totals"]
    assert t["sessions_failed"] == t["sessions_attempted"] > 0, t
    assert t["functions"]["smtp_connect"]["pass"] == 0, t["functions"]["smtp_connect"]

    # Bad lists.
    nine = ",".join(f"127.0.0.1:{dead}" for _ in range(9))
    p = run(h, "nine", nine, f"127.0.0.1:{pop}", sink, expect_rc=3)
    assert "more than 8" in p.stderr, p.stderr
    p = run(h, "empty", f"127.0.0.1:{smtp},", f"127.0.0.1:{pop}", sink, expect_rc=3)
    assert "not a list" in p.stderr, p.stderr


if __name__ == "__main__":
    mtharness.main(test)
