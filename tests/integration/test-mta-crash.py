#!/usr/bin/env python3
"""test-mta-crash.py -- the MTA's durability promise under kill -9: 16
concurrent SMTP clients send messages (1-3 local recipients on two shards)
while mailtier-mta is killed with SIGKILL at random moments, ROUNDS times,
and restarted on the same queue each time. At the end every message that
got its 250 must have reached every one of its recipients, and exactly once.

The shards are real mailtier-popstore daemons; the mailboxes are read back
over POP3 (TOP n 0, the X-Token header) after the queue drained. A kill
between a store's commit and the MTA's record of the 250 makes the restarted
MTA deliver the message again; the store knows the delivery's id (the MTA's
LHLO name and XQUEUEID) and stores no second copy (store/store-dedupe.c).
The store logs each such redelivery ("lmtp duplicate"): their count is
printed, the copies in the mailboxes must be one per recipient.

  test-mta-crash.py [ROUNDS]      default 10"""

import os
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


def delivered(env, users):
    """token -> {rcpt: copies} over both shards, read over POP3."""
    out = {}
    for user, shard in users.items():
        p = env.pop(shard, user)
        try:
            count = int(p.stat()[0])
            for i in range(1, count + 1):
                _, lines, _ = p.top(i, 0)
                for line in lines:
                    found = re.match(rb"X-Token: (\S+)", line)
                    if found:
                        per = out.setdefault(found.group(1).decode(), {})
                        per[user] = per.get(user, 0) + 1
                        break
        finally:
            p.quit()
        # Reopened by the next pass: let the store release the mailbox.
    return out


def redeliveries(h):
    """The redeliveries the stores answered without a second copy."""
    n = 0
    for name in os.listdir(h.tmpdir):
        if name.startswith("popstore-") and name.endswith(".log"):
            with open(os.path.join(h.tmpdir, name), errors="replace") as f:
                n += sum("lmtp duplicate" in line for line in f)
    return n


def test(h, rounds=10):
    users = {u: ("s1" if i % 2 == 0 else "s2") for i, u in enumerate(USERS)}
    env = mta_setup.MtaEnv(h, users=users, popstore=True, mta_options={
        "retry_schedule": "1s", "mynetworks": "127.0.0.0/8",
        "max_sessions_per_client": "100", "connection_cache_time": "2s"})
    env.start_popstores()
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
    deadline = time.monotonic() + 90
    while True:
        got = delivered(env, users)
        missing = [(t, r) for t, rcpts in acked for r in rcpts
                   if got.get(t, {}).get(r, 0) == 0]
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(1)
    duplicates = [(t, r, n) for t, per in got.items() for r, n in per.items() if n > 1]
    print(f"acknowledged messages: {len(acked)}; recipient deliveries expected: "
          f"{expected}; missing: {len(missing)}; duplicate copies: "
          f"{sum(n - 1 for _, _, n in duplicates)}; redeliveries the stores "
          f"recognised: {redeliveries(h)}; rounds: {rounds}", flush=True)
    assert not missing, f"acknowledged but never delivered: {missing[:10]}"
    assert not duplicates, f"delivered more than once: {duplicates[:10]}"
    assert len(acked) >= rounds * 5, "too few messages got through to test anything"
    mta.stop()


if __name__ == "__main__":
    mtharness.main(test, *(int(a) for a in sys.argv[1:]))
