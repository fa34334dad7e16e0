#!/usr/bin/env python3
"""test-sec-rcpt-enum.py -- mailtier-mta against recipient enumeration
(issue #19 item 6: 400 addresses over 28 connections in 0.2 s found all
100 valid ones).

With the defaults (rcpt_fail_delay = 1s, rcpt_fail_limit = 20,
rcpt_fail_window = 5m), from client addresses outside mynetworks:
- the 550 to the n-th unknown local recipient from one address waits
  1 s * 2^(n-1), across connections (measured: 1 s, 2 s, 4 s), while a
  known recipient is answered at once, another address starts at 1 s, and
  other sessions are served meanwhile (a timer, not a blocked loop);
- after 20 unknown recipients (the delay set to 0 by a reload to reach
  them quickly; limit and window stay the defaults) every RCPT to a local
  domain from that address -- known user or not, any connection -- gets
  450 4.7.1 without a lookup, so nothing more can be learnt within the
  window; another address is unaffected;
- the session's end-of-session line counts unknown_rcpt=N rcpt_limited=N;
- clients in mynetworks get the 550 at once and are never limited.
From these the test computes what the audit's enumeration (300 unknown
among 400, any number of connections) costs one address now: at most 20
unknown per 5-minute window, i.e. over an hour, where it took 0.2 s."""

import math
import time

import sec_setup
import mta_setup
import mtharness

USERS = [f"user{i}@example.test" for i in range(5)]
DEFAULT_DELAY, DEFAULT_LIMIT, DEFAULT_WINDOW = 1.0, 20, 300.0
LIMIT_REPLY = ("450 4.7.1 <{}>: Recipient address rejected: too many unknown "
               "recipients from your address, try again later")


def session(env, source):
    r = sec_setup.Raw(env.smtp_port, source=source, timeout=30)
    assert r.cmd("EHLO client.test")[0] == 250
    assert r.cmd("MAIL FROM:<probe@remote.test>")[0] == 250
    return r


def timed_rcpt(r, address):
    t0 = time.monotonic()
    code, text = r.cmd(f"RCPT TO:<{address}>")
    return code, text, time.monotonic() - t0


def check_delays(env):
    """Delay growth per address, across connections; known users at once."""
    took = []
    r = session(env, "127.0.0.3")
    for i, address in enumerate(["nobody0@example.test", USERS[0],
                                 "nobody1@example.test"]):
        code, text, t = timed_rcpt(r, address)
        if address in USERS:
            assert code == 250 and t < 0.5, (address, text, t)
        else:
            assert text.startswith("550 5.1.1"), text
            took.append(t)
    r.cmd("QUIT")
    r.close()
    # The third, on a new connection: the count is the address's. Meanwhile
    # another client is served at once (the delay is a timer).
    r = session(env, "127.0.0.3")
    t0 = time.monotonic()
    r.send("RCPT TO:<nobody2@example.test>\r\n")
    other = sec_setup.Raw(env.smtp_port, source="127.0.0.4")
    t1 = time.monotonic()
    assert other.cmd("EHLO other.test")[0] == 250 and other.cmd("NOOP")[0] == 250
    assert time.monotonic() - t1 < 0.5, "another session waited for the delay"
    code, text = r.reply()
    took.append(time.monotonic() - t0)
    assert text.startswith("550 5.1.1"), text
    # A known recipient right after is not delayed.
    code, text, t = timed_rcpt(r, USERS[1])
    assert code == 250 and t < 0.5, (text, t)
    r.cmd("QUIT")
    r.close()
    print("unknown-recipient delays from 127.0.0.3:", ["%.2f" % t for t in took])
    for n, t in enumerate(took):
        want = DEFAULT_DELAY * 2 ** n
        assert want * 0.9 <= t <= want + 1.0, (n, t, took)
    # Another address starts at the first delay.
    assert other.cmd("MAIL FROM:<probe@remote.test>")[0] == 250
    code, text, t = timed_rcpt(other, "nobody9@example.test")
    assert text.startswith("550 5.1.1") and DEFAULT_DELAY * 0.9 <= t <= DEFAULT_DELAY + 1.0, t
    other.cmd("QUIT")
    other.close()
    env.mta.wait_log(r"disconnect from 127\.0\.0\.3:\d+ .* unknown_rcpt=2$")
    env.mta.wait_log(r"disconnect from 127\.0\.0\.3:\d+ .* unknown_rcpt=1$")
    return took


def check_trusted(env):
    r = session(env, "127.0.0.2")
    for i in range(DEFAULT_LIMIT + 3):
        code, text, t = timed_rcpt(r, f"unknown{i}@example.test")
        assert text.startswith("550 5.1.1") and t < 0.5, (i, text, t)
    assert timed_rcpt(r, USERS[2])[0] == 250
    r.cmd("QUIT")
    r.close()


def check_limit(env):
    """Limit and window are the defaults; only the delay is off."""
    r = session(env, "127.0.0.5")
    for i in range(DEFAULT_LIMIT):
        code, text, t = timed_rcpt(r, f"guess{i}@example.test")
        assert text.startswith("550 5.1.1"), (i, text)
    for address in ("guess99@example.test", USERS[0]):
        code, text = r.cmd(f"RCPT TO:<{address}>")
        assert (code, text) == (450, LIMIT_REPLY.format(address)), text
    # Not a local domain: the relay policy answers as before.
    assert r.cmd("RCPT TO:<x@other.test>")[1].startswith("554 5.7.1")
    r.cmd("QUIT")
    r.close()
    env.mta.wait_log(r"disconnect from 127\.0\.0\.5:\d+ .* unknown_rcpt=%d "
                     r"rcpt_limited=2" % DEFAULT_LIMIT)
    env.mta.wait_log(r"client 127\.0\.0\.5 reached rcpt_fail_limit=%d" % DEFAULT_LIMIT)
    # A new connection from the same address: still refused, a known user too.
    r = session(env, "127.0.0.5")
    code, text = r.cmd(f"RCPT TO:<{USERS[3]}>")
    assert (code, text) == (450, LIMIT_REPLY.format(USERS[3])), text
    r.cmd("QUIT")
    r.close()
    # Another address is not limited.
    r = session(env, "127.0.0.6")
    assert r.cmd(f"RCPT TO:<{USERS[3]}>")[0] == 250
    r.cmd("QUIT")
    r.close()


def test(h):
    env = mta_setup.MtaEnv(h, users={u: "s1" for u in USERS},
                           mta_options={"max_errors": "100"})
    env.start_mta()
    took = check_delays(env)
    check_trusted(env)
    env.options["rcpt_fail_delay"] = "0"
    env.write_config()
    env.mta.reload()
    env.mta.wait_log(r"reload: done")
    check_limit(env)
    env.mta.stop()

    # What the audit's enumeration costs one address now. Per window at
    # most DEFAULT_LIMIT unknown recipients are answered, whatever the
    # number of connections; serially each one also waits its delay
    # (doubling as measured, capped at 60 s).
    unknown = 300
    windows = math.ceil(unknown / DEFAULT_LIMIT) - 1
    by_limit = windows * DEFAULT_WINDOW
    growth = took[1] / took[0], took[2] / took[1]
    serial = sum(min(60.0, took[0] * 2 ** n) for n in range(unknown))
    print(f"measured doubling x{growth[0]:.2f}, x{growth[1]:.2f}; limit {DEFAULT_LIMIT} "
          f"per {DEFAULT_WINDOW:.0f} s window")
    print(f"enumerating {unknown} unknown among 400: >= {by_limit / 60:.0f} min by the "
          f"limit (any number of connections), {serial / 3600:.1f} h of delays on one "
          f"connection; was 0.2 s")
    assert all(1.6 <= g <= 2.5 for g in growth), growth
    assert by_limit >= 10 * 60, by_limit


if __name__ == "__main__":
    mtharness.main(test)
