#!/usr/bin/env python3
"""test-popstore-imap-view.py -- a session's view of its selected mailbox
follows the mailbox (RFC 9051 5.2, 7.4.1, 7.5.1), with several sessions
on one mailbox of a live mailtier-popstore and a real slapd, through raw
sockets (the exact lines and their order) and Python's imaplib:

  - COPY and MOVE into the selected mailbox announce the new messages
    (EXISTS before the tagged OK, as APPEND does), the new UIDs are in
    the view at once (FETCH 1:*, UID STORE), STATUS agrees, NOOP sends
    nothing more; a COPY elsewhere on a stale view reports what another
    session expunged; the other session sees the EXISTS at its NOOP;
  - STORE answers each message's current flags also where another session
    set them first, .SILENT still reports flags the client could not
    foresee, and the session's NOOP does not repeat them; with CONDSTORE
    or QRESYNC every FETCH a STORE causes carries UID and MODSEQ (RFC 7162
    3.1), also for a plain STORE;
  - EXPUNGE on a stale view first reports what another session expunged,
    and removes the messages another session marked \\Deleted; UID
    EXPUNGE the same; VANISHED instead of EXPUNGE with QRESYNC;
  - APPEND of a zero-octet message is refused (NO), nothing stored.

These are issue 37's items 9-12 and 8a; each function names its item.
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


def fill(s, folder, n):
    """APPEND n messages to folder, its uids 1..n (a fresh folder)."""
    for i in range(n):
        s.ok(f"APPEND {folder}", message(f"{folder} {i}", f"body {i}\r\n"))


def test_copy_move_selected(env):
    """Item 9: COPY / MOVE into the selected mailbox."""
    user = f"cora@{D}"
    a, b = Session(env, user), Session(env, user)
    a.ok("CREATE f")
    fill(a, "f", 2)
    lines, _ = a.ok("SELECT f")
    assert b"* 2 EXISTS" in lines, lines
    b.ok("SELECT f")
    # COPY 1 f: the copy (uid 3) is announced before the OK, in the view.
    lines, tagged = a.ok("COPY 1 f")
    assert re.match(rb"OK \[COPYUID \d+ 1 3\] COPY completed\.", tagged), tagged
    assert lines == [b"* 3 EXISTS"], lines
    assert a.uids() == [1, 2, 3]
    lines, _ = a.ok("STATUS f (MESSAGES)")
    assert lines == [b'* STATUS f (MESSAGES 3)'], lines
    lines, _ = a.ok("NOOP")
    assert lines == [], lines
    # UID STORE on the new uid at once (it is in the view).
    lines, _ = a.ok("UID STORE 3 +FLAGS (\\Flagged)")
    assert lines == [b"* 3 FETCH (FLAGS (\\Flagged) UID 3)"], lines
    # MOVE 1 f: COPYUID, the EXPUNGE of the original, the EXISTS of the
    # copy (uid 4), then OK.
    lines, tagged = a.ok("MOVE 1 f")
    assert tagged == b"OK MOVE completed.", tagged
    assert len(lines) == 3 and re.match(rb"\* OK \[COPYUID \d+ 1 4\] ", lines[0]), lines
    assert lines[1:] == [b"* 1 EXPUNGE", b"* 3 EXISTS"], lines
    assert a.uids() == [2, 3, 4]
    # UID COPY / UID MOVE the same.
    lines, tagged = a.ok("UID COPY 2 f")
    assert re.match(rb"OK \[COPYUID \d+ 2 5\] UID COPY completed\.", tagged), tagged
    assert lines == [b"* 4 EXISTS"], lines
    lines, tagged = a.ok("UID MOVE 5 f")
    assert lines[1:] == [b"* 4 EXPUNGE", b"* 4 EXISTS"], lines
    assert a.uids() == [2, 3, 4, 6]
    # The other session learns all of it at its NOOP.
    lines, _ = b.ok("NOOP")
    assert b"* 1 EXPUNGE" in lines and b"* 4 EXISTS" in lines, lines
    assert b.uids() == [2, 3, 4, 6]
    # A COPY elsewhere on a stale view: what B expunged is reported
    # before the OK (EXPUNGE is allowed during COPY, RFC 9051 7.5.1).
    b.ok("STORE 1 +FLAGS.SILENT (\\Deleted)")
    b.ok("EXPUNGE")
    lines, tagged = a.ok("COPY 1:2 INBOX")
    assert lines == [b"* 1 EXPUNGE"], lines
    # uid 2 was gone: only uid 3 (message 2 of the old view) was copied.
    assert re.match(rb"OK \[COPYUID \d+ 3 1\] COPY completed\.", tagged), tagged
    assert a.uids() == [3, 4, 6]
    # With QRESYNC (enabled in the authenticated state): VANISHED, then
    # EXISTS.
    a.ok("UNSELECT")
    a.ok("ENABLE QRESYNC")
    a.ok("SELECT f")
    lines, _ = a.ok("MOVE 1 f")
    assert re.match(rb"\* OK \[COPYUID \d+ 3 7\] ", lines[0]), lines
    assert lines[1:] == [b"* VANISHED 3", b"* 3 EXISTS"], lines
    assert a.uids() == [4, 6, 7]
    a.close()
    b.close()


def test_copy_move_imaplib(env):
    """Item 9 as imaplib sees it: EXISTS in untagged_responses, FETCH
    finds the copy."""
    user = f"cora2@{D}"
    c = env.imap("s1", user=user, password=PW)
    c.create("f")
    for i in range(2):
        assert c.append("f", None, None, message(f"m {i}", "x\r\n"))[0] == "OK"
    typ, data = c.select("f")
    assert data == [b"2"], data
    c.untagged_responses.clear()
    typ, data = c.copy("1", "f")
    assert typ == "OK" and b"COPYUID" in data[0], data
    assert c.untagged_responses.get("EXISTS") == [b"3"], c.untagged_responses
    typ, data = c.fetch("1:*", "(UID)")
    assert data == [b"1 (UID 1)", b"2 (UID 2)", b"3 (UID 3)"], data
    c.untagged_responses.clear()
    typ, data = c._simple_command("MOVE", "2", "f")
    assert typ == "OK", data
    assert c.untagged_responses.get("EXPUNGE") == [b"2"], c.untagged_responses
    assert c.untagged_responses.get("EXISTS") == [b"3"], c.untagged_responses
    typ, data = c.fetch("1:*", "(UID)")
    assert data == [b"1 (UID 1)", b"2 (UID 3)", b"3 (UID 4)"], data
    c.logout()


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


def test_expunge_stale(env):
    """Item 11: EXPUNGE reports what another session expunged, and
    expunges what it marked \\Deleted; with and without QRESYNC."""
    user = f"fay@{D}"
    for i in range(5):
        env.deliver("s1", "x@remote.test", [user], message(f"e {i}", f"body {i}\r\n"))
    a, b = Session(env, user), Session(env, user)
    a.ok("SELECT INBOX")
    b.ok("SELECT INBOX")
    # B expunges uid 1; A's EXPUNGE (nothing \Deleted in A's view) says so.
    b.ok("STORE 1 +FLAGS.SILENT (\\Deleted)")
    lines, _ = b.ok("EXPUNGE")
    assert lines == [b"* 1 EXPUNGE"], lines
    lines, _ = a.ok("EXPUNGE")
    assert lines == [b"* 1 EXPUNGE"], lines
    lines, _ = a.ok("NOOP")
    assert lines == [], lines
    assert a.uids() == [2, 3, 4, 5]
    # B marks uid 3 \Deleted; A's EXPUNGE removes it (RFC 9051 6.4.3: the
    # messages that have \Deleted), the flag reported first.
    b.ok("STORE 2 +FLAGS.SILENT (\\Deleted)")
    lines, _ = a.ok("EXPUNGE")
    assert lines == [b"* 2 FETCH (FLAGS (\\Deleted) UID 3)", b"* 2 EXPUNGE"], lines
    assert a.uids() == [2, 4, 5]
    lines, _ = b.ok("NOOP")
    assert lines == [b"* 2 EXPUNGE"], lines
    # UID EXPUNGE: only the set, but what B expunged is reported.
    b.ok("STORE 1:2 +FLAGS.SILENT (\\Deleted)")     # uids 2 and 4
    b.ok("UID EXPUNGE 2")
    lines, _ = a.ok("UID EXPUNGE 5")
    assert lines[0] == b"* 1 EXPUNGE" and lines[1:] == [b"* 1 FETCH (FLAGS (\\Deleted) UID 4)"], \
        lines
    assert a.uids() == [4, 5]
    # With QRESYNC: VANISHED. B expunges uid 4 and flags uid 5.
    a.ok("UNSELECT")
    a.ok("ENABLE QRESYNC")
    a.ok("SELECT INBOX")
    b.ok("UID EXPUNGE 4")
    b.ok("STORE 1 +FLAGS.SILENT (\\Deleted)")
    lines, _ = a.ok("EXPUNGE")
    assert lines[0] == b"* VANISHED 4", lines
    assert re.fullmatch(rb"\* 1 FETCH \(FLAGS \(\\Deleted\) UID 5 MODSEQ \(\d+\)\)",
                        lines[1]), lines
    assert lines[2:] == [b"* VANISHED 5"], lines
    lines, _ = a.ok("SELECT INBOX")
    assert b"* 0 EXISTS" in lines, lines
    a.close()
    b.close()


def test_expunge_imaplib(env):
    """Item 11 with imaplib: the EXPUNGE response comes with the
    EXPUNGE, not at the next NOOP."""
    user = f"fay2@{D}"
    for i in range(2):
        env.deliver("s1", "x@remote.test", [user], message(f"i {i}", f"body {i}\r\n"))
    a = env.imap("s1", user=user, password=PW)
    b = env.imap("s1", user=user, password=PW)
    a.select("INBOX")
    b.select("INBOX")
    b.store("2", "+FLAGS", "(\\Deleted)")
    b.expunge()
    typ, data = a.expunge()
    assert typ == "OK" and data == [b"2"], (typ, data)
    a.untagged_responses.clear()
    a.noop()
    assert "EXPUNGE" not in a.untagged_responses, a.untagged_responses
    a.logout()
    b.logout()


def test_append_empty(env):
    """Item 8a: a zero-octet APPEND is refused, nothing stored."""
    user = f"gwen@{D}"
    s = Session(env, user)
    lines, tagged = s.cmd("APPEND INBOX", b"")
    assert tagged.startswith(b"NO "), (lines, tagged)
    lines, _ = s.ok("STATUS INBOX (MESSAGES UIDNEXT)")
    assert lines == [b"* STATUS INBOX (MESSAGES 0 UIDNEXT 1)"], lines
    s.ok("APPEND INBOX", message("real", "x\r\n"))
    s.close()
    c = env.imap("s1", user=user, password=PW)
    typ, data = c.append("INBOX", None, None, b"")     # {0}, synchronising
    assert typ == "NO", (typ, data)
    typ, data = c.status("INBOX", "(MESSAGES)")
    assert data == [b"INBOX (MESSAGES 1)"], data
    c.logout()


TESTS = (test_copy_move_selected, test_copy_move_imaplib, test_store_current_flags,
         test_store_imaplib, test_condstore_uid, test_expunge_stale,
         test_expunge_imaplib, test_append_empty)


def test(h, only=()):
    env = popstorelib.Env(h, shards=("s1",), popstore_extra="allow_plaintext_auth = yes\n")
    for u in ("cora", "cora2", "dora", "dora2", "edna", "fay", "fay2", "gwen"):
        env.add_user(f"{u}@{D}", PW)
    env.start("s1")
    for t in TESTS:
        if not only or t.__name__ in only:
            t(env)


if __name__ == "__main__":
    # Arguments: only these test_* functions (each uses its own users).
    mtharness.main(test, sys.argv[1:])
