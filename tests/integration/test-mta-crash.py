#!/usr/bin/env python3
"""test-mta-crash.py -- the MTA's durability promise under kill -9: 16
concurrent SMTP clients send messages (1-3 local recipients on two shards)
while mailtier-mta is killed with SIGKILL at random moments, ROUNDS times,
and restarted on the same queue each time. At the end every message that
got its 250 must have reached every one of its recipients at least once;
duplicates (a delivery done but not yet recorded when the kill came) are
counted and reported, not failed.

The shards are lmtpd.py LMTP stand-ins living in this process, so they see
every delivery across the MTA's restarts.

  test-mta-crash.py [ROUNDS]      default 10"""

import random
import re
import smtplib
import sys
import threading
import time

import mta_setup
import mtharness

CLIENTS = 16
USERS = [f"u{i}@example.test" for i in range(8)]


class Client(threading.Thread):
    def __init__(self, env, index, acked, stop):
        super().__init__(daemon=True)
        self.env, self.index, self.acked, self.stop = env, index, acked, stop
        self.sent = 0

    def run(self):
        rng = random.Random(self.index * 7919 + int(time.time()))
        while not self.stop.is_set():
            try:
                with smtplib.SMTP("127.0.0.1", self.env.smtp_port, timeout=5) as s:
                    s.ehlo(f"client{self.index}.test")
                    for _ in range(rng.randint(1, 4)):
                        if self.stop.is_set():
                            return
                        token = f"c{self.index}-{self.sent}-{time.time_ns()}"
                        rcpts = rng.sample(USERS, rng.randint(1, 3))
                        # 10 B to 20 KB in lines of 76 (the MTA refuses
                        # lines over 998 octets, RFC 5322 2.1.1).
                        body = (f"Subject: {token}\r\nX-Token: {token}\r\n\r\n" +
                                ("x" * 76 + "\r\n") * rng.randint(0, 263) +
                                "x" * rng.randint(10, 76) + "\r\n")
                        self.sent += 1
                        s.sendmail("load@remote.test", rcpts, body)
                        # Here the 250 after DATA has arrived.
                        self.acked.append((token, tuple(rcpts)))
            except (OSError, smtplib.SMTPException):
                time.sleep(0.05)


def delivered(env):
    """token -> {rcpt: count} over both shards."""
    out = {}
    for sink in env.shards.values():
        with sink.lock:
            msgs = list(sink.messages)
        for m in msgs:
            found = re.search(rb"X-Token: (\S+)", m.data)
            if found:
                per = out.setdefault(found.group(1).decode(), {})
                per[m.rcpt] = per.get(m.rcpt, 0) + 1
    return out


def test(h, rounds=10):
    users = {u: ("s1" if i % 2 == 0 else "s2") for i, u in enumerate(USERS)}
    env = mta_setup.MtaEnv(h, users=users, mta_options={
        "retry_schedule": "1s", "mynetworks": "127.0.0.0/8",
        "max_sessions_per_client": "100", "connection_cache_time": "2s"})
    acked = []
    rng = random.Random()
    for rnd in range(rounds):
        mta = env.start_mta(name=f"mta{rnd}")
        stop = threading.Event()
        clients = [Client(env, i, acked, stop) for i in range(CLIENTS)]
        for c in clients:
            c.start()
        time.sleep(rng.uniform(0.3, 1.5))
        mta.kill()                      # SIGKILL, at whatever moment this is
        stop.set()
        for c in clients:
            c.join(10)
        print(f"round {rnd + 1}: killed; {len(acked)} messages acknowledged so far",
              flush=True)

    mta = env.start_mta(name="mta-final")
    expected = sum(len(r) for _, r in acked)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        got = delivered(env)
        missing = [(t, r) for t, rcpts in acked for r in rcpts
                   if got.get(t, {}).get(r, 0) == 0]
        if not missing:
            break
        time.sleep(0.5)
    got = delivered(env)
    missing = [(t, r) for t, rcpts in acked for r in rcpts
               if got.get(t, {}).get(r, 0) == 0]
    duplicates = sum(max(0, n - 1) for per in got.values() for n in per.values())
    print(f"acknowledged messages: {len(acked)}; recipient deliveries expected: "
          f"{expected}; missing: {len(missing)}; duplicates: {duplicates}; "
          f"rounds: {rounds}", flush=True)
    assert not missing, f"acknowledged but never delivered: {missing[:10]}"
    assert len(acked) >= rounds * 5, "too few messages got through to test anything"
    mta.stop()


if __name__ == "__main__":
    mtharness.main(test, *(int(a) for a in sys.argv[1:]))
