#!/usr/bin/env python3
"""test-popstore-imap-view.py -- a session's view of its selected mailbox
follows the mailbox (RFC 9051 5.2, 7.4.1, 7.5.1), with several sessions
on one mailbox of a live mailtier-popstore and a real slapd, through raw
sockets (the exact lines and their order) and Python's imaplib:

  - STORE answers each message's current flags also where another session
    set them first, .SILENT still reports flags the client could not
    foresee, and the session's NOOP does not repeat them; with CONDSTORE
    or QRESYNC every FETCH a STORE causes carries UID and MODSEQ (RFC 7162
    3.1), also for a plain STORE.

These are issue 37's items 10 and 12; each function names its item.
Arguments: only the test_* functions named (each has its own users).
"""

import re
import sys

import mtharness
import popstorelib
from popstorelib import Lines, message

D = popstorelib.DOMAIN
PW = "view-pass-1"


class Session:
    """A raw IMAP session: each command's untagged lines and tagged line."""

    def __init__(self, env, user):
        self.sock = env.raw("s1", "imap")
        self.sock.settimeout(15)
        self.r = Lines(self.sock)
        self.n = 0
        assert self.r.line().startswith(b"* OK")
        self.ok(f"LOGIN {user} {PW}")

    def cmd(self, text, literal=None):
        """(untagged lines, tagged line) of one command; literal (bytes) is
        sent as a LITERAL+ literal after text."""
        self.n += 1
        tag = f"t{self.n}"
        if literal is None:
            self.r.send(f"{tag} {text}\r\n")
        else:
            self.r.send(f"{tag} {text} {{{len(literal)}+}}\r\n".encode() + literal + b"\r\n")
        lines = []
        while True:
            line = self.r.line()
            assert line is not None, ("closed", text, lines)
            if line.startswith(tag.encode() + b" "):
                return lines, line[len(tag) + 1:]
            lines.append(line)

    def ok(self, text, literal=None):
        lines, tagged = self.cmd(text, literal)
        assert tagged.startswith(b"OK"), (text, lines, tagged)
        return lines, tagged

    def uids(self):
        lines, _ = self.ok("FETCH 1:* (UID)")
        return [int(re.search(rb"UID (\d+)", l).group(1)) for l in lines]

    def close(self):
        self.cmd("LOGOUT")
        self.sock.close()


def untagged(lines, word):
    return [l for l in lines if l.split(b" ")[2:3] == [word.encode()]]


def test_store_current_flags(env):
    """Item 10: STORE's FETCH gives the flags the message has."""
    user = f"dora@{D}"
    for i in range(3):
        env.deliver("s1", "x@remote.test", [user], message(f"s {i}", f"body {i}\r\n"))
    a, b = Session(env, user), Session(env, user)
    a.ok("SELECT INBOX")
    b.ok("SELECT INBOX")
    # The case: both delete message 1; B is told it is deleted.
    lines, _ = a.ok("STORE 1 +FLAGS (\\Deleted)")
    assert lines == [b"* 1 FETCH (FLAGS (\\Deleted))"], lines
    lines, _ = b.ok("STORE 1 +FLAGS (\\Deleted)")
    assert lines == [b"* 1 FETCH (FLAGS (\\Deleted))"], lines
    # A change of B's on top of one of A's: both flags.
    a.ok("STORE 2 +FLAGS (\\Flagged $Work)")
    lines, _ = b.ok("STORE 2 +FLAGS (\\Seen)")
    assert lines == [b"* 2 FETCH (FLAGS (\\Seen \\Flagged $Work))"], lines
    # .SILENT: A's \Answered is news to B, so it is reported; what B
    # asked for and foresaw is not.
    a.ok("STORE 3 +FLAGS (\\Answered)")
    lines, _ = b.ok("STORE 3 +FLAGS.SILENT (\\Seen)")
    assert lines == [b"* 3 FETCH (FLAGS (\\Seen \\Answered))"], lines
    lines, _ = b.ok("STORE 3 +FLAGS.SILENT (\\Seen)")
    assert lines == [], lines
    a.ok("STORE 3 +FLAGS (\\Draft)")
    lines, _ = b.ok("STORE 3 +FLAGS.SILENT (\\Draft)")     # unchanged, foreseen
    assert lines == [], lines
    a.ok("STORE 3 -FLAGS (\\Seen)")
    lines, _ = b.ok("STORE 3 +FLAGS.SILENT (\\Answered)")  # unchanged, not foreseen
    assert lines == [b"* 3 FETCH (FLAGS (\\Answered \\Draft))"], lines
    # Nothing of it comes again at NOOP.
    lines, _ = b.ok("NOOP")
    assert not untagged(lines, "FETCH"), lines
    lines, _ = b.ok("FETCH 1:* (FLAGS)")
    assert lines == [b"* 1 FETCH (FLAGS (\\Deleted))",
                     b"* 2 FETCH (FLAGS (\\Seen \\Flagged $Work))",
                     b"* 3 FETCH (FLAGS (\\Answered \\Draft))"], lines
    # With CONDSTORE (a MODSEQ item enables it, RFC 7162 3.1): the MODSEQ
    # A's change gave, and the UID.
    b.ok("FETCH 1 (MODSEQ)")
    a.ok("STORE 1 +FLAGS (\\Flagged)")
    lines, _ = a.ok("FETCH 1 (MODSEQ)")
    modseq = re.search(rb"MODSEQ \((\d+)\)", lines[0]).group(1)
    lines, _ = b.ok("STORE 1 +FLAGS (\\Flagged)")
    assert lines == [b"* 1 FETCH (FLAGS (\\Flagged \\Deleted) UID 1 MODSEQ (" + modseq +
                     b"))"], lines
    a.close()
    b.close()


def test_store_imaplib(env):
    """Item 10 with imaplib's store(): the reply it returns."""
    user = f"dora2@{D}"
    env.deliver("s1", "x@remote.test", [user], message("one", "1\r\n"))
    a = env.imap("s1", user=user, password=PW)
    b = env.imap("s1", user=user, password=PW)
    a.select("INBOX")
    b.select("INBOX")
    typ, data = a.store("1", "+FLAGS", "(\\Deleted)")
    assert data == [b"1 (FLAGS (\\Deleted))"], data
    typ, data = b.store("1", "+FLAGS", "(\\Deleted)")
    assert typ == "OK" and data == [b"1 (FLAGS (\\Deleted))"], data
    a.logout()
    b.logout()


def test_condstore_uid(env):
    """Item 12: with QRESYNC or CONDSTORE enabled, a plain STORE's FETCH
    has UID and MODSEQ; without, neither."""
    user = f"edna@{D}"
    for i in range(3):
        env.deliver("s1", "x@remote.test", [user], message(f"u {i}", f"body {i}\r\n"))
    plain, q, cs = Session(env, user), Session(env, user), Session(env, user)
    plain.ok("SELECT INBOX")
    lines, _ = plain.ok("STORE 2 +FLAGS (\\Seen)")
    assert lines == [b"* 2 FETCH (FLAGS (\\Seen))"], lines
    lines, _ = plain.ok("STORE 2 -FLAGS.SILENT (\\Seen)")
    assert lines == [], lines
    for s, ext in ((q, "QRESYNC"), (cs, "CONDSTORE")):
        lines, _ = s.ok(f"ENABLE {ext}")
        assert lines == [f"* ENABLED {ext}".encode()], lines
        s.ok("SELECT INBOX")
        lines, _ = s.ok("STORE 1 +FLAGS (\\Answered)")
        assert len(lines) == 1 and re.fullmatch(
            rb"\* 1 FETCH \(FLAGS \(\\Answered[^)]*\) UID 1 MODSEQ \(\d+\)\)", lines[0]), lines
        lines, _ = s.ok("STORE 2 +FLAGS.SILENT (\\Flagged)")
        assert len(lines) == 1 and re.fullmatch(
            rb"\* 2 FETCH \(UID 2 MODSEQ \(\d+\)\)", lines[0]), lines
        lines, _ = s.ok("UID STORE 3 +FLAGS (\\Seen)")
        assert len(lines) == 1 and re.fullmatch(
            rb"\* 3 FETCH \(FLAGS \(\\Seen\) UID 3 MODSEQ \(\d+\)\)", lines[0]), lines
        s.ok("STORE 1:3 -FLAGS.SILENT (\\Answered \\Seen \\Flagged)")
    for s in (plain, q, cs):
        s.close()


TESTS = (test_store_current_flags, test_store_imaplib, test_condstore_uid)


def test(h, only=()):
    env = popstorelib.Env(h, shards=("s1",), popstore_extra="allow_plaintext_auth = yes\n")
    for u in ("dora", "dora2", "edna"):
        env.add_user(f"{u}@{D}", PW)
    env.start("s1")
    for t in TESTS:
        if not only or t.__name__ in only:
            t(env)


if __name__ == "__main__":
    # Arguments: only these test_* functions (each uses its own users).
    mtharness.main(test, sys.argv[1:])
