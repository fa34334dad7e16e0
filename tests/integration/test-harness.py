#!/usr/bin/env python3
"""test-harness.py -- checks the integration-test harness and the daemon
plumbing every tier shares (lib/loop, lib/sdnotify, lib/log) end to end, on
mt-echod started through the real sd_notify protocol:

  * start-up waits for READY=1 (sender pid checked), STATUS= is sent, and
    with WATCHDOG_USEC set WATCHDOG=1 keeps arriving;
  * lines are echoed over TCP, also in pieces and pipelined;
  * SIGHUP gives RELOADING=1 then READY=1 and logs "reload";
  * SIGTERM: idle clients get "BYE shutting down" and EOF, STOPPING=1 is
    sent, and the daemon exits 0 well before the drain bound;
  * with worker threads and a client that never reads, SIGTERM still ends
    in exit 0 once the drain bound expires, not later.

mt-echod is found under $MT_BUILDDIR (tests/harness/mt-echod). Exits 0, 1,
or 77 when the platform lacks what the harness needs (Linux AF_UNIX
credentials).
"""

import os
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True     # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "harness"))
import mtharness  # noqa: E402
from mtharness import HarnessError  # noqa: E402

DRAIN_SECS = 3


def check(cond, what):
    if not cond:
        raise HarnessError(what)


def read_lines(sock, count):
    """Read exactly count CRLF lines (without the CRLF)."""
    data = b""
    while data.count(b"\r\n") < count:
        chunk = sock.recv(4096)
        check(chunk, f"EOF after {data!r}, wanted {count} lines")
        data += chunk
    lines = data.split(b"\r\n")
    check(lines[count:] == [b""], f"more than {count} lines: {data!r}")
    return lines[:count]


def expect_eof(sock):
    rest = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            return rest
        rest += chunk


def test_echo(h, port):
    with h.connect(port) as s:
        s.sendall(b"hello\r\n")
        check(read_lines(s, 1) == [b"hello"], "simple echo")
        # Pipelined, LF-only, and split in the middle of a line.
        s.sendall(b"one\ntwo\r\nthr")
        time.sleep(0.05)
        s.sendall(b"ee\r\n")
        check(read_lines(s, 3) == [b"one", b"two", b"three"], "pipelined")
        s.sendall(b"QUIT\r\n")
        check(read_lines(s, 1) == [b"BYE"], "QUIT answered")
        check(expect_eof(s) == b"", "closed after QUIT")


def test_notify_and_reload(h, d, port):
    statuses = d.notify_values("STATUS")
    check(any(v.startswith("echoing on 127.0.0.1:") for v in statuses),
          f"STATUS= not sent: {statuses}")
    # WATCHDOG_USEC=400000: a keep-alive at start, then every 200 ms.
    since = len(d.messages)
    d.drain_notify(1.0)
    beats = [t for t in d.messages[since:] if t[1] == "WATCHDOG=1"]
    check(len(beats) >= 3, f"only {len(beats)} WATCHDOG=1 in 1 s")
    check(not d.foreign, f"messages from other pids: {d.foreign}")

    d.reload()      # waits for RELOADING=1 then READY=1
    d.wait_log(r"info: reload$")
    test_echo(h, port)


def test_graceful_stop(h, d, port, with_notify):
    idle = h.connect(port)
    idle.sendall(b"still here\r\n")
    check(read_lines(idle, 1) == [b"still here"], "idle client echo")
    took = d.stop(timeout=DRAIN_SECS + 10)
    check(took < DRAIN_SECS, f"stop took {took:.2f} s although the only "
          "session closed at once")
    check(read_lines(idle, 1) == [b"BYE shutting down"], "goodbye line")
    check(expect_eof(idle) == b"", "closed after goodbye")
    idle.close()
    if with_notify:
        check("STOPPING=1" in [t for _, t in d.messages], "STOPPING=1")
    log = d.log()
    check("signal=SIGTERM action=drain" in log, "drain logged")
    check("exit status=0" in log, "clean exit logged")


def fill_without_reading(s, seconds=1.0):
    """Send lines until neither our send buffer nor the daemon accepts more
    for a while: the daemon then holds output it cannot write."""
    s.setblocking(False)
    line = b"x" * 100 + b"\r\n"
    blob = line * 100
    sent = 0
    idle_since = time.monotonic()
    while time.monotonic() - idle_since < seconds:
        try:
            sent += s.send(blob)
            idle_since = time.monotonic()
        except BlockingIOError:
            time.sleep(0.02)
    return sent


def test_bounded_drain_with_workers(h, echod, kwargs):
    port = h.free_port()
    argv = [echod, "-l", f"127.0.0.1:{port}", "-w", "2", "-t", "1"]
    port6 = None
    if mtharness.have_ipv6():
        port6 = h.free_port("::1")
        argv += ["-l", f"[::1]:{port6}"]
    if "ready_port" in kwargs:
        kwargs = dict(kwargs, ready_port=port)
    d = h.start("echod-workers", argv, **kwargs)

    # Several sessions spread over the worker threads.
    socks = [h.connect(port) for _ in range(6)]
    for i, s in enumerate(socks):
        s.sendall(b"n%d\r\n" % i)
    for i, s in enumerate(socks):
        check(read_lines(s, 1) == [b"n%d" % i], f"worker echo {i}")
        s.close()
    if port6 is not None:
        with h.connect(port6, host="::1") as s:
            s.sendall(b"six\r\n")
            check(read_lines(s, 1) == [b"six"], "IPv6 echo")

    stuck = h.connect(port)
    sent = fill_without_reading(stuck)
    check(sent > 65536, f"only {sent} bytes went out")
    took = d.stop(timeout=10)
    check(0.8 <= took < 6, f"stop took {took:.2f} s, drain bound 1 s")
    d.wait_log(r"drain time of 1000 ms is over", timeout=1)
    stuck.close()


def test(h):
    if not hasattr(socket, "SO_PASSCRED") or not hasattr(socket, "AF_UNIX"):
        raise mtharness.Skip("needs Linux AF_UNIX sockets with SO_PASSCRED")
    echod = h.binary("tests/harness/mt-echod")
    version = subprocess.run([echod, "-V"], capture_output=True, text=True,
                             timeout=10)
    check(version.returncode == 0, f"mt-echod -V: {version.stderr}")
    with_notify = "sd_notify=yes" in version.stdout
    if not with_notify:
        print("mt-echod built without libsystemd: waiting on ports instead "
              "of READY=1", file=sys.stderr)

    port = h.free_port()
    kwargs = ({"watchdog_usec": 400000} if with_notify
              else {"notify": False, "ready_port": port})
    d = h.start("echod", [echod, "-l", f"127.0.0.1:{port}",
                          "-t", str(DRAIN_SECS)], **kwargs)
    test_echo(h, port)
    if with_notify:
        test_notify_and_reload(h, d, port)
    else:
        d.reload()
        d.wait_log(r"info: reload$")
    test_graceful_stop(h, d, port, with_notify)

    kwargs.pop("watchdog_usec", None)
    test_bounded_drain_with_workers(h, echod, kwargs)


if __name__ == "__main__":
    mtharness.main(test)
