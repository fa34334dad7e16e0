#!/usr/bin/env python3
"""test-popstore-crash.py -- kill -9 of mailtier-popstore under load.

Each round starts the daemon (recovery runs at open), lets 16 concurrent
LMTP clients deliver messages (1 or 2 recipients each) and a POP3 client
delete messages (DELE + QUIT), and kills the daemon with SIGKILL at a
random moment. After at least ROUNDS rounds it checks, over every mailbox:

  - every delivery that got 250 is present exactly once, unless a QUIT
    that got +OK deleted it;
  - nothing a QUIT acknowledged as deleted came back;
  - no message is present twice;
  - expunges are lazy (bodies purged after the +OK by the store's purger):
    a daemon killed with bodies still queued logs "purge backlog at open"
    at its restart, checked while that backlog is (likely) still queued
    and then purged ("purge backlog done") by the restarted daemon alone.

Messages carry an X-Test-Id header; the POP3 client learns ids with TOP.
Deliveries and deletions that were in flight (no reply) may or may not
have happened: they are allowed either way.

Environment: CRASH_ROUNDS (default 12), CRASH_SEED.
"""

import os
import random
import re
import smtplib
import threading
import time

import mtharness
import popstorelib

D = popstorelib.DOMAIN
USERS = [f"crash{i}@{D}" for i in range(8)]
PASSWORD = "pw-crash"
ID_RE = re.compile(rb"^X-Test-Id: (\S+)", re.M)


class Book:
    """What the server acknowledged (thread-safe)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.delivered = {}          # (user, id) -> count of 250s
        self.deleted = set()         # (user, id) whose QUIT got +OK
        self.maybe_deleted = set()   # DELE sent, QUIT not acknowledged
        self.counter = 0

    def next_id(self, client):
        with self.lock:
            self.counter += 1
            return f"c{client}-{self.counter}"


def lmtp_worker(env, book, client, stop, rng):
    try:
        lm = smtplib.LMTP()
        lm.timeout = 10
        lm.connect("127.0.0.1", env.ports["s1"]["lmtp"])
        lm.ehlo_or_helo_if_needed()
        while not stop.is_set():
            mid = book.next_id(client)
            rcpts = rng.sample(USERS, rng.choice((1, 1, 2)))
            body = (f"X-Test-Id: {mid}\r\n\r\n" + "crash test line\r\n" *
                    rng.randint(1, 400)).encode()
            rr, dr = env.deliver("s1", "s@remote.test", rcpts, body, lm=lm)
            accepted = [r for r, (c, _) in zip(rcpts, rr) if c == 250]
            if len(dr) != len(accepted):
                return          # connection died mid-reply
            with book.lock:
                for r, (code, _) in zip(accepted, dr):
                    if code == 250:
                        book.delivered[(r, mid)] = book.delivered.get((r, mid), 0) + 1
    except (OSError, smtplib.SMTPException, AssertionError, EOFError):
        return


def pop_worker(env, book, stop, rng):
    while not stop.is_set():
        user = rng.choice(USERS)
        marked = []
        try:
            p = env.pop("s1")
            p.sock.settimeout(10)
            p.user(user)
            p.pass_(PASSWORD)
            count = p.stat()[0]
            for n in range(1, count + 1):
                if rng.random() < 0.5:
                    continue
                top = b"\r\n".join(p.top(n, 0)[1])
                m = ID_RE.search(top)
                if m is None:
                    continue
                mid = m.group(1).decode()
                with book.lock:
                    book.maybe_deleted.add((user, mid))
                p.dele(n)
                marked.append((user, mid))
            resp = p.quit()
            if resp.startswith(b"+OK"):
                with book.lock:
                    book.deleted.update(marked)
        except (OSError, popstorelib.poplib.error_proto, EOFError):
            if stop.is_set():
                return
            time.sleep(0.05)


def read_all(env):
    """(user, id) -> how many times it is in the mailboxes now."""
    present = {}
    for user in USERS:
        p = env.pop("s1", user, PASSWORD)
        count = p.stat()[0]
        for n in range(1, count + 1):
            top = b"\r\n".join(p.top(n, 0)[1])
            m = ID_RE.search(top)
            assert m is not None, top
            key = (user, m.group(1).decode())
            present[key] = present.get(key, 0) + 1
        p.quit()
    return present


BACKLOG_RE = re.compile(r"purge backlog at open: messages=(\d+)")


def purge_backlog(d):
    """Bodies queued at this daemon's start (0 if none were logged)."""
    m = BACKLOG_RE.search(d.log())
    return int(m.group(1)) if m else 0


def wait_purged(d, timeout=30):
    deadline = time.monotonic() + timeout
    while "purge backlog done" not in d.log():
        assert time.monotonic() < deadline, "the restarted daemon did not purge its backlog"
        time.sleep(0.1)


def test(h):
    rounds = int(os.environ.get("CRASH_ROUNDS", "12"))
    seed = int(os.environ.get("CRASH_SEED", str(int(time.time()))))
    h.note(f"crash test: {rounds} rounds, seed {seed}")
    rng = random.Random(seed)
    # Bodies wait 2 s for the purger: a kill almost always finds some.
    env = popstorelib.Env(h, shards=("s1",), popstore_extra="purge_delay = 2s\n")
    for u in USERS:
        env.add_user(u, PASSWORD)
    book = Book()
    backlogs = []

    for rnd in range(rounds):
        d = env.start("s1", name=f"popstore-r{rnd}")
        if rnd > 0:
            backlogs.append(purge_backlog(d))
        stop = threading.Event()
        threads = [threading.Thread(target=lmtp_worker,
                                    args=(env, book, i, stop, random.Random(rng.random())))
                   for i in range(16)]
        threads.append(threading.Thread(target=pop_worker,
                                        args=(env, book, stop, random.Random(rng.random()))))
        for t in threads:
            t.start()
        time.sleep(rng.uniform(0.3, 1.5))
        d.kill()                    # SIGKILL, then reap
        stop.set()
        for t in threads:
            t.join(30)
            assert not t.is_alive(), "a client thread hung"

    d = env.start("s1", name="popstore-check")
    present = read_all(env)     # as soon as it starts: bodies may be queued
    backlogs.append(purge_backlog(d))
    if backlogs[-1]:
        wait_purged(d)
        assert read_all(env) == present, "the purge changed a listing"
    d.stop()

    acked = {k for k, n in book.delivered.items() if n > 0}
    assert len(acked) > 100, f"too little load: {len(acked)} deliveries acknowledged"
    assert all(n == 1 for n in book.delivered.values()), "an id got two 250s"
    dups = {k: n for k, n in present.items() if n > 1}
    assert not dups, f"present more than once: {sorted(dups)[:5]}"
    back = book.deleted & set(present)
    assert not back, f"acknowledged deletions came back: {sorted(back)[:5]}"
    lost = {k for k in acked - set(present)
            if k not in book.deleted and k not in book.maybe_deleted}
    assert not lost, f"acknowledged deliveries lost: {sorted(lost)[:5]}"
    if rounds >= 6:
        assert any(backlogs), "no kill left expunged bodies queued"
    print(f"crash test: {rounds} rounds, {len(acked)} deliveries acknowledged, "
          f"{len(book.deleted)} deletions acknowledged, {len(present)} present, "
          f"restarts with a purge backlog: {sum(1 for b in backlogs if b)} "
          f"(bodies {backlogs}), seed {seed}")


if __name__ == "__main__":
    mtharness.main(test)
