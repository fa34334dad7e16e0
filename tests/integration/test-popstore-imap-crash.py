#!/usr/bin/env python3
"""test-popstore-imap-crash.py -- kill -9 of mailtier-popstore under mixed
IMAP and LMTP load (issue 15's crash test).

Each round starts the daemon (recovery runs at open), lets 8 LMTP clients
deliver and 4 IMAP clients APPEND to Archive, STORE +FLAGS (\\Flagged),
MOVE to Moved and STORE \\Deleted + EXPUNGE in INBOX, and kills the daemon
with SIGKILL at a random moment. After the rounds, every mailbox is read
over IMAP and checked against what the server acknowledged:

  - every delivery that got 250 and every APPEND that got OK is present
    exactly once, unless an EXPUNGE or MOVE of it was (maybe) done;
  - an acknowledged EXPUNGE is not undone: the message is nowhere;
    (for this and \\Flagged below: unless another session's MOVE of it was
    sent before the answer, which may have found it gone: RFC 2180 4.2.1)
  - an acknowledged MOVE is in Moved, never back in INBOX, and once;
  - an acknowledged \\Flagged is on the message wherever it is now;
  - no message is anywhere twice.
Operations in flight at the kill (no reply) may or may not have happened:
each is allowed either way. Messages carry an X-Test-Id header.

Environment: CRASH_ROUNDS (default 8), CRASH_SEED.
"""

import imaplib
import os
import random
import re
import smtplib
import threading
import time

import mtharness
import popstorelib

D = popstorelib.DOMAIN
USERS = [f"ic{i}@{D}" for i in range(4)]
PASSWORD = "pw-icrash"
ID_RE = re.compile(rb"X-Test-Id: (\S+)")
FOLDERS = ("INBOX", "Moved", "Archive")


class Book:
    """What the server acknowledged, and what may have happened."""

    def __init__(self):
        self.lock = threading.Lock()
        self.stored = set()          # (user, id): 250 or APPEND OK
        self.maybe_stored = set()    # APPEND sent, no answer
        self.expunged = set()        # EXPUNGE OK
        self.maybe_expunged = set()
        self.moved = set()           # MOVE OK
        self.maybe_moved = set()
        self.flagged = {}            # STORE +FLAGS (\Flagged) OK -> when
        self.expunge_acked = {}      # EXPUNGE OK -> when
        self.move_sent = {}          # first MOVE of it sent -> when
        self.counter = 0

    def next_id(self, who):
        with self.lock:
            self.counter += 1
            return f"{who}-{self.counter}"


def lmtp_worker(env, book, client, stop, rng):
    try:
        lm = smtplib.LMTP()
        lm.timeout = 10
        lm.connect("127.0.0.1", env.ports["s1"]["lmtp"])
        lm.ehlo_or_helo_if_needed()
        while not stop.is_set():
            mid = book.next_id(f"l{client}")
            user = rng.choice(USERS)
            body = (f"X-Test-Id: {mid}\r\nSubject: lmtp\r\n\r\n" +
                    "line\r\n" * rng.randint(1, 300)).encode()
            rr, dr = env.deliver("s1", "s@remote.test", [user], body, lm=lm)
            if rr[0][0] == 250 and dr and dr[0][0] == 250:
                with book.lock:
                    book.stored.add((user, mid))
    except (OSError, smtplib.SMTPException, AssertionError, EOFError):
        return


def ids_of(c):
    """[(seq, id)] of the selected mailbox."""
    typ, data = c.fetch("1:*", "(BODY.PEEK[HEADER.FIELDS (X-Test-Id)])")
    out = []
    for d in data:
        if isinstance(d, tuple):
            m = ID_RE.search(d[1])
            if m:
                out.append((int(d[0].split()[0]), m.group(1).decode()))
    return out


def imap_worker(env, book, client, stop, rng):
    while not stop.is_set():
        user = rng.choice(USERS)
        pending = None          # (set, key) of an operation in flight
        try:
            c = env.imap("s1", user=user, password=PASSWORD)
            c.sock.settimeout(10)
            typ, data = c.select("INBOX")
            if typ != "OK":
                continue
            for _ in range(rng.randint(1, 6)):
                if stop.is_set():
                    break
                action = rng.random()
                if action < 0.3:
                    mid = book.next_id(f"i{client}")
                    with book.lock:
                        book.maybe_stored.add((user, mid))
                    typ, data = c.append("Archive", None, None,
                                         f"X-Test-Id: {mid}\r\n\r\nappended\r\n".encode())
                    if typ == "OK":
                        with book.lock:
                            book.stored.add((user, mid))
                    continue
                try:
                    known = ids_of(c)
                except imaplib.IMAP4.error:
                    known = []      # an empty mailbox: 1:* is BAD
                if not known:
                    c.noop()
                    continue
                seq, mid = rng.choice(known)
                if action < 0.55:
                    typ, _ = c.store(str(seq), "+FLAGS", "(\\Flagged)")
                    if typ == "OK":
                        with book.lock:
                            book.flagged.setdefault((user, mid), time.monotonic())
                elif action < 0.8:
                    with book.lock:
                        book.maybe_moved.add((user, mid))
                        book.move_sent.setdefault((user, mid), time.monotonic())
                    typ, _ = c._simple_command("MOVE", str(seq), "Moved")
                    if typ == "OK":
                        with book.lock:
                            book.moved.add((user, mid))
                else:
                    with book.lock:
                        book.maybe_expunged.add((user, mid))
                    c.store(str(seq), "+FLAGS.SILENT", "(\\Deleted)")
                    typ, _ = c.expunge()
                    if typ == "OK":
                        with book.lock:
                            book.expunged.add((user, mid))
                            book.expunge_acked.setdefault((user, mid), time.monotonic())
                    # \Deleted stays on an unexpunged one: later EXPUNGEs
                    # in other sessions may take it.
            c.logout()
        except (OSError, imaplib.IMAP4.error, imaplib.IMAP4.abort, EOFError,
                ValueError, IndexError):
            if stop.is_set():
                return
            time.sleep(0.05)


def read_all(env):
    """(user, id) -> [(folder, flags)] of every message now."""
    present = {}
    for user in USERS:
        c = env.imap("s1", user=user, password=PASSWORD)
        for folder in FOLDERS:
            typ, data = c.select(folder)
            assert typ == "OK", (folder, data)
            if data == [b"0"]:
                continue
            typ, data = c.fetch("1:*", "(FLAGS BODY.PEEK[HEADER.FIELDS (X-Test-Id)])")
            for d in data:
                if not isinstance(d, tuple):
                    continue
                m = ID_RE.search(d[1])
                assert m is not None, d
                flags = d[0].decode()
                present.setdefault((user, m.group(1).decode()), []).append((folder, flags))
        c.logout()
    return present


def test(h):
    rounds = int(os.environ.get("CRASH_ROUNDS", "8"))
    seed = int(os.environ.get("CRASH_SEED", str(int(time.time()))))
    h.note(f"imap crash test: {rounds} rounds, seed {seed}")
    rng = random.Random(seed)
    env = popstorelib.Env(h, shards=("s1",), popstore_extra="purge_delay = 1s\n")
    for u in USERS:
        env.add_user(u, PASSWORD)
    book = Book()
    d = env.start("s1", name="popstore-setup")
    for u in USERS:
        c = env.imap("s1", user=u, password=PASSWORD)
        typ, data = c.create("Moved")
        assert typ == "OK", data
        c.logout()
    d.stop()

    for rnd in range(rounds):
        d = env.start("s1", name=f"popstore-r{rnd}")
        stop = threading.Event()
        threads = [threading.Thread(target=lmtp_worker,
                                    args=(env, book, i, stop, random.Random(rng.random())))
                   for i in range(8)]
        threads += [threading.Thread(target=imap_worker,
                                     args=(env, book, i, stop, random.Random(rng.random())))
                    for i in range(4)]
        for t in threads:
            t.start()
        time.sleep(rng.uniform(0.5, 2.0))
        d.kill()                    # SIGKILL, then reap
        stop.set()
        for t in threads:
            t.join(30)
            assert not t.is_alive(), "a client thread hung"

    d = env.start("s1", name="popstore-check")
    present = read_all(env)
    d.stop()

    assert len(book.stored) > 50, f"too little load: {len(book.stored)} stored"
    assert book.moved and book.expunged and book.flagged, \
        (len(book.moved), len(book.expunged), len(book.flagged))
    dups = {k: v for k, v in present.items() if len(v) > 1}
    assert not dups, f"present more than once: {sorted(dups.items())[:3]}"
    # Another session's MOVE sent before this STORE or EXPUNGE was answered
    # may have taken the message first: the STORE or EXPUNGE then found it
    # gone, which RFC 2180 4.2.1 lets the server answer OK. Only a change
    # answered before any MOVE of the message was sent must show.
    def raced(k, acked):
        return k in book.move_sent and book.move_sent[k] < acked[k]
    back = {k for k in book.expunged & set(present) if not raced(k, book.expunge_acked)}
    assert not back, ("acknowledged expunges undone: " +
                      str([(k, present[k], k in book.moved) for k in sorted(back)[:5]]))
    lost = {k for k in book.stored - set(present)
            if k not in book.expunged and k not in book.maybe_expunged}
    assert not lost, f"acknowledged messages lost: {sorted(lost)[:5]}"
    for k in book.moved & set(present):
        assert present[k][0][0] == "Moved", (k, present[k])
    for k in set(book.flagged) & set(present):
        if raced(k, book.flagged):
            continue
        assert "\\Flagged" in present[k][0][1], (k, present[k])
    print(f"imap crash test: {rounds} rounds, {len(book.stored)} stored "
          f"(LMTP and APPEND), {len(book.moved)} moves, {len(book.expunged)} "
          f"expunges, {len(book.flagged)} flag changes acknowledged, "
          f"{len(present)} present, seed {seed}")


if __name__ == "__main__":
    mtharness.main(test)
