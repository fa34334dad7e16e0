#!/usr/bin/env python3
"""test-popstore-imap.py -- mailtier-popstore's IMAP server as far as it
goes (login, folders, SELECT, FETCH, STORE, COPY/MOVE, EXPUNGE, APPEND,
SEARCH, IDLE, several sessions, MIME structure), with Python's imaplib, curl
imap:// and imaps://, fetchmail, getmail6 and raw sockets against a real slapd, messages
delivered over LMTP:

  - the greeting's CAPABILITY; from a non-proxy address without TLS:
    LOGINDISABLED and STARTTLS, LOGIN refused with [PRIVACYREQUIRED],
    accepted after STARTTLS and on the implicit-TLS listener;
  - LOGIN and AUTHENTICATE PLAIN (continuation and SASL-IR), a wrong
    password [AUTHENTICATIONFAILED], a user of another shard [UNAVAILABLE],
    the MMP's proxy login with an authorization identity;
  - the first login's special-use folders, LIST with its attributes and
    LIST-EXTENDED options (SUBSCRIBED, SPECIAL-USE, RETURN STATUS), LSUB
    (an unsubscribed superior of a subscribed mailbox \\Noselect),
    CREATE with superiors, DELETE ([HASCHILDREN], [NONEXISTENT]), RENAME
    (inferiors, INBOX's messages), SUBSCRIBE, STATUS after deliveries,
    modified UTF-7 names and UTF-8 ones after ENABLE UTF8=ACCEPT;
  - SELECT / EXAMINE (EXISTS, FLAGS, UIDVALIDITY, UIDNEXT, READ-WRITE /
    READ-ONLY), CLOSE, UNSELECT; POP3's exclusive INBOX ([INUSE]);
  - FETCH of UID, FLAGS, INTERNALDATE, RFC822.SIZE and every body section
    byte for byte (a 2.8 MB one streamed), \\Seen set by BODY[], STORE
    with keywords and .SILENT, COPY (COPYUID), MOVE (EXPUNGE responses),
    EXPUNGE, UID EXPUNGE, APPEND with flags and date (APPENDUID,
    TRYCREATE), bad sets; curl's UID fetch; fetchmail over IMAP;
  - MIME structure recorded at delivery: ENVELOPE, BODYSTRUCTURE, BODY
    and the FULL macro of a multipart/mixed message (alternative text and
    HTML, a base64 attachment, a forwarded message/rfc822, an x-uuencode
    part), delivered over LMTP, APPENDed and COPYed; BODY[1.1], [1.2.MIME],
    [3.HEADER], [3.TEXT], [3.HEADER.FIELDS (Subject)], [3.1] byte for
    byte against the message; BINARY[...] and BINARY.SIZE[...] equal to
    Python's own base64 / quoted-printable decoders; a missing part NIL;
    BINARY of an unknown encoding NO [UNKNOWN-CTE]; NULs of a "binary"
    part APPENDed as a literal8: 0x80 in BODY[], a literal8 in BINARY[];
  - several sessions on one mailbox: each other's flags and expunges at
    NOOP, deliveries' EXISTS, IDLE pushing a delivery, a POP3 QUIT's
    deletion and another session's keyword; POP3 beside IMAP;
  - SEARCH with flag, keyword, header, body (330 KB in), text, size, date
    and set keys, FROM over the envelope's addresses (an addr-spec with
    comments), UID SEARCH, ESEARCH's RETURN (MIN MAX COUNT / ALL),
    BADCHARSET and BAD;
  - CONDSTORE: HIGHESTMODSEQ, FETCH MODSEQ and CHANGEDSINCE, STORE
    UNCHANGEDSINCE and [MODIFIED], SEARCH MODSEQ (ESEARCH's MODSEQ that
    of what MIN / MAX return), STATUS HIGHESTMODSEQ;
  - QRESYNC: SELECT (QRESYNC (uidvalidity modseq)) answers VANISHED
    (EARLIER) and the changed flags, expunges become VANISHED, UID FETCH
    (CHANGEDSINCE n VANISHED); refused without ENABLE QRESYNC;
  - QUOTA: GETQUOTAROOT / GETQUOTA against the directory's quota, APPEND
    and COPY refused [OVERQUOTA] (MOVE not), SETQUOTA [NOPERM],
    APPENDLIMIT;
  - isync/mbsync syncs INBOX and a folder both ways (flags, a local
    deletion expunged, a local message appended, a server flag brought
    down), and a third run changes nothing; offlineimap3 mirrors the
    folders and uploads a message written into the local Sent;
  - synchronising literals and LITERAL+, bad commands answered BAD with
    the session going on, too many errors end it;
  - folders survive kill -9 and a restart (every change durable when
    answered).
"""

import base64
import imaplib
import os
import re
import shutil
import socket
import subprocess
import tempfile

import mtharness
import popstorelib
from popstorelib import Lines, message

D = popstorelib.DOMAIN
PW = "imap-pass-1"


def ok(res):
    typ, data = res
    assert typ == "OK", res
    return data


def names(c, *args):
    """LIST's lines as {name: attributes}."""
    out = {}
    for line in ok(c.list(*args)):
        if line is None:
            continue
        if isinstance(line, tuple):
            line = line[0] + line[1]
        attrs, rest = line.decode().split(") ", 1)
        delim, name = rest.split(" ", 1)
        assert delim == '"/"', line
        out[name.strip('"')] = attrs.lstrip("(").split()
    return out


def test_login(env):
    # Plain from a non-proxy address: no credentials before TLS.
    c = env.imap("s1", source="127.0.0.2")
    caps = c.capabilities
    assert "LOGINDISABLED" in caps and "STARTTLS" in caps, caps
    assert "IMAP4REV2" in caps and "IMAP4REV1" in caps, caps
    assert "AUTH=PLAIN" not in caps, caps
    try:
        c.login(f"alice@{D}", PW)
        raise AssertionError("LOGIN accepted before TLS")
    except imaplib.IMAP4.error as e:
        assert "PRIVACYREQUIRED" in str(e), e
    c.starttls(ssl_context=popstorelib.insecure_context())
    typ, caps = c.capability()
    assert b"AUTH=PLAIN" in caps[0] and b"LOGINDISABLED" not in caps[0], caps
    typ, data = c.login(f"alice@{D}", PW)
    assert typ == "OK" and b"[CAPABILITY" in data[0], data
    c.logout()

    # Implicit TLS: the session's log names its protocol version and cipher.
    c = env.imap("s1", tls="implicit", user=f"alice@{D}", password=PW)
    c.logout()
    env.daemons["s1"].wait_log(r'imap tls="TLSv1\.[23] [A-Z0-9_-]+"')

    # Wrong password, unknown user: the same answer.
    for user, pw in ((f"alice@{D}", "wrong"), (f"nobody@{D}", PW)):
        c = env.imap("s1")
        try:
            c.login(user, pw)
            raise AssertionError("bad login accepted")
        except imaplib.IMAP4.error as e:
            assert "[AUTHENTICATIONFAILED]" in str(e), e
        c.logout()
    # A user of the other shard.
    c = env.imap("s1")
    try:
        c.login(f"bob@{D}", PW)
        raise AssertionError("other shard's user accepted")
    except imaplib.IMAP4.error as e:
        assert "[UNAVAILABLE]" in str(e), e
    c.logout()

    # AUTHENTICATE PLAIN on a continuation (imaplib), the proxy login.
    c = env.imap("s1")
    ok(c.authenticate("PLAIN", lambda _: f"\0alice@{D}\0{PW}".encode()))
    c.logout()
    c = env.imap("s1")
    ok(c.authenticate("PLAIN", lambda _: (
        f"alice@{D}\0{popstorelib.PROXY_USER}\0{popstorelib.PROXY_PASSWORD}").encode()))
    c.logout()
    # The proxy credential from a non-proxy address: refused (after TLS).
    c = env.imap("s1", source="127.0.0.2")
    c.starttls(ssl_context=popstorelib.insecure_context())
    try:
        c.authenticate("PLAIN", lambda _: (
            f"alice@{D}\0{popstorelib.PROXY_USER}\0{popstorelib.PROXY_PASSWORD}").encode())
        raise AssertionError("proxy login from a non-proxy address")
    except imaplib.IMAP4.error as e:
        assert "AUTHENTICATIONFAILED" in str(e), e
    c.logout()

    # SASL-IR and literals, by hand.
    s = env.raw("s1", "imap")
    r = Lines(s)
    assert r.line().startswith(b"* OK [CAPABILITY "), "greeting"
    ir = base64.b64encode(f"\0alice@{D}\0{PW}".encode()).decode()
    line = r.cmd(f"a AUTHENTICATE PLAIN {ir}")
    assert line.startswith(b"a OK [CAPABILITY "), line
    r.send("b LOGOUT\r\n")
    assert r.line() == b"* BYE Logging out"
    assert r.line() == b"b OK LOGOUT completed."
    assert r.closed()
    s = env.raw("s1", "imap")
    r = Lines(s)
    r.line()
    assert r.cmd(f"a LOGIN alice@{D} {{{len(PW)}}}") == b"+ Ready for literal data"
    assert r.cmd(PW).startswith(b"a OK ")
    assert r.cmd("b NOOP") == b"b OK NOOP completed."
    # LITERAL+: no continuation.
    r.send("c CREATE {4+}\r\nLitF\r\n")
    assert r.line() == b"c OK CREATE completed."
    assert r.cmd("d DELETE LitF") == b"d OK DELETE completed."
    s.close()


def test_folders(env):
    c = env.imap("s1", user=f"carol@{D}", password=PW)
    # The first login's folders, subscribed, with their special uses.
    listed = names(c)
    assert set(listed) == {"INBOX", "Sent", "Drafts", "Trash", "Junk", "Archive"}, listed
    assert "\\Sent" in listed["Sent"] and "\\HasNoChildren" in listed["Sent"], listed
    assert "\\Trash" in listed["Trash"] and "\\Junk" in listed["Junk"], listed
    lsub = ok(c.lsub())
    assert len(lsub) == 6, lsub
    # CREATE with superiors; errors.
    ok(c.create("Work/2026/Q4"))
    listed = names(c)
    assert "\\HasChildren" in listed["Work"] and "Work/2026/Q4" in listed, listed
    typ, data = c.create("Work")
    assert typ == "NO" and b"[ALREADYEXISTS]" in data[0], data
    typ, data = c.create("INBOX")
    assert typ == "NO" and b"[ALREADYEXISTS]" in data[0], data
    typ, data = c.delete("Work")
    assert typ == "NO" and b"[HASCHILDREN]" in data[0], data
    typ, data = c.delete("Nope")
    assert typ == "NO" and b"[NONEXISTENT]" in data[0], data
    typ, data = c.delete("INBOX")
    assert typ == "NO", data
    typ, data = c.create("a//b")
    assert typ == "NO" and b"[CANNOT]" in data[0], data
    # RENAME with inferiors.
    ok(c.rename("Work", "Job"))
    listed = names(c)
    assert "Job/2026/Q4" in listed and "Work" not in listed, listed
    # Patterns: % stops at the delimiter.
    assert set(names(c, "\"\"", "Job/%")) == {"Job/2026"}
    assert set(names(c, "Job/", "*")) == {"Job/2026", "Job/2026/Q4"}
    # The delimiter query.
    typ, data = c.list("\"\"", "\"\"")
    assert data == [b'(\\Noselect) "/" ""'], data
    # Subscriptions: LIST (SUBSCRIBED), LIST-EXTENDED RETURN options.
    ok(c.subscribe("Job/2026"))
    ok(c.unsubscribe("Junk"))
    typ, data = c._simple_command("LIST", "(SUBSCRIBED)", '""', "*")
    got = c._untagged_response(typ, data, "LIST")[1]
    subscribed = [l.decode() for l in got if l]
    assert any(l.endswith(" Job/2026") and "\\Subscribed" in l for l in subscribed), subscribed
    assert not any(l.endswith(" Junk") for l in subscribed), subscribed
    typ, data = c._simple_command("LIST", "(SPECIAL-USE)", '""', "*")
    got = [l.decode() for l in c._untagged_response(typ, data, "LIST")[1] if l]
    assert len(got) == 5 and all("\\Has" in l for l in got), got
    # Deliveries, then STATUS and LIST ... RETURN (STATUS ...).
    for i in range(3):
        env.deliver("s1", "x@remote.test", [f"carol@{D}"],
                    message(f"m{i}", f"body {i}\r\n"))
    typ, data = c.status("INBOX", "(MESSAGES UIDNEXT UIDVALIDITY UNSEEN DELETED SIZE)")
    st = data[0].decode()
    assert "MESSAGES 3" in st and "UIDNEXT 4" in st and "UNSEEN 3" in st, st
    assert "DELETED 0" in st and "UIDVALIDITY " in st, st
    # RFC 8438 STATUS=SIZE (IMAP4rev2's SIZE, advertised for rev1
    # clients): the mailbox's octets, the sum of its RFC822.SIZEs.
    typ, caps = c.capability()
    assert b" STATUS=SIZE" in caps[0], caps
    ok(c.select("INBOX", readonly=True))
    typ, data = c.fetch("1:*", "(RFC822.SIZE)")
    sizes = [int(re.search(rb"RFC822\.SIZE (\d+)", d).group(1)) for d in data]
    assert f"SIZE {sum(sizes)}" in st and len(sizes) == 3, (st, sizes)
    ok(c.unselect())
    typ, data = c._simple_command("LIST", '""', "INBOX", "RETURN", "(STATUS (MESSAGES))")
    got = c._untagged_response(typ, data, "STATUS")[1]
    assert got and b"MESSAGES 3" in got[0], got
    typ, data = c.status("Nope", "(MESSAGES)")
    assert typ == "NO" and b"[NONEXISTENT]" in data[0], data
    # Modified UTF-7, then UTF-8 after ENABLE.
    ok(c.create("Entw&APw-rfe"))
    assert "Entw&APw-rfe" in names(c)
    typ, data = c.create("Bad&AOQ")
    assert typ == "NO", data
    ok(c._simple_command("ENABLE", "UTF8=ACCEPT"))
    c._encoding = "utf-8"
    listed = names(c)
    assert "Entwürfe" in listed, listed
    c.logout()


def test_select(env):
    c = env.imap("s1", user=f"carol@{D}", password=PW)
    typ, data = c.select("INBOX")
    assert typ == "OK" and data == [b"3"], (typ, data)
    assert c.untagged_responses.get("FLAGS"), c.untagged_responses
    assert c.untagged_responses.get("UIDVALIDITY"), c.untagged_responses
    assert c.untagged_responses.get("UIDNEXT") == [b"4"], c.untagged_responses
    assert c.untagged_responses.get("READ-WRITE") is not None, c.untagged_responses
    # POP3's lock is among POP3 sessions (RFC 1939 8): it may open the
    # INBOX an IMAP session has selected; a second POP3 session may not.
    p = env.pop("s1", user=f"carol@{D}", password=PW)
    assert p.stat()[0] == 3
    p2 = env.pop("s1")
    p2.user(f"carol@{D}")
    try:
        p2.pass_(PW)
        raise AssertionError("two POP3 sessions on one maildrop")
    except Exception as e:
        assert "IN-USE" in str(e), e
    p2.quit()
    p.quit()
    ok(c.close())
    # EXAMINE: read-only; UNSELECT.
    typ, data = c.select("Job/2026", readonly=True)
    assert typ == "OK" and data == [b"0"], data
    assert c.untagged_responses.get("READ-ONLY") is not None
    ok(c._simple_command("UNSELECT"))
    typ, data = c.select("Nope")
    assert typ == "NO" and b"[NONEXISTENT]" in data[0], data
    # RENAME INBOX: its messages move, INBOX starts over.
    ok(c.rename("INBOX", "Old"))
    typ, data = c.status("Old", "(MESSAGES)")
    assert b"MESSAGES 3" in data[0], data
    typ, data = c.status("INBOX", "(MESSAGES UIDNEXT)")
    assert b"MESSAGES 0" in data[0] and b"UIDNEXT 1" in data[0], data
    c.logout()
    # POP3 sees the new, empty INBOX.
    p = env.pop("s1", user=f"carol@{D}", password=PW)
    assert p.stat()[0] == 0
    p.quit()


def test_bad_input(env):
    s = env.raw("s1", "imap")
    r = Lines(s)
    r.line()
    assert r.cmd("a FROB") == b"a BAD Unknown command."
    assert r.cmd("b SELECT INBOX") == b"b BAD Command not valid in this state."
    assert r.cmd("c LOGIN") == b"c BAD LOGIN takes a user name and a password."
    line = r.cmd("(bad")
    assert line.startswith(b"* BAD "), line
    assert r.cmd("d NOOP") == b"d OK NOOP completed."
    # Too many errors (max_errors = 10; 4 so far) end the session.
    for i in range(6):
        assert r.cmd(f"e{i} FROB") == f"e{i} BAD Unknown command.".encode()
    assert r.line() == b"* BYE Too many errors, closing connection"
    assert r.closed()


def test_durable(env, h):
    c = env.imap("s1", user=f"dave@{D}", password=PW)
    ok(c.create("Keep/This"))
    ok(c.rename("Keep/This", "Keep/That"))
    ok(c.subscribe("Keep/That"))
    # kill -9 right after the OKs: they were durable.
    env.daemons["s1"].kill()
    env.start("s1", name="popstore-s1-restarted")
    c = env.imap("s1", user=f"dave@{D}", password=PW)
    listed = names(c)
    assert "Keep/That" in listed and "Keep/This" not in listed, listed
    typ, data = c._simple_command("LIST", "(SUBSCRIBED)", '""', "Keep/*")
    got = c._untagged_response(typ, data, "LIST")[1]
    assert got and b"Keep/That" in got[0], got
    c.logout()
    # mailtierctl shows them while the daemon serves.
    out = h.ctl("store", "folders", "s1", f"dave@{D}", config=env.conf).stdout
    lines = {l.split()[0]: l.split() for l in out.splitlines()[1:]}
    assert "INBOX" in lines and "Keep/That" in lines and "Keep" in lines, out
    assert "\\Sent" in lines["Sent"] and "subscribed" in lines["Sent"], out
    assert lines["Keep/That"][1] == "0", out


def fetch_one(c, num, item, uid=False):
    """The literal of item for message num."""
    typ, data = (c.uid("FETCH", num, item) if uid else c.fetch(num, item))
    assert typ == "OK", (typ, data)
    for d in data:
        if isinstance(d, tuple):
            return d[0], d[1]
    raise AssertionError(data)


def test_messages(env):
    user = f"erin@{D}"
    bodies = [message("first", "one\r\n.two\r\n"),
              message("second", b"8-bit \xc3\xa4\r\n" * 3,
                      "X-Tag: a\r\n  folded\r\n"),
              message("big", b"x" * 76 + b"\r\n" * 1) * 1]
    big = message("large", (b"0123456789" * 7 + b"\r\n") * 40000)   # ~2.8 MB
    for b in bodies + [big]:
        env.deliver("s1", "x@remote.test", [user], b)
    c = env.imap("s1", user=user, password=PW)
    typ, data = c.select("INBOX")
    assert data == [b"4"], data
    # Attributes without a body.
    typ, data = c.fetch("1:*", "(UID FLAGS RFC822.SIZE INTERNALDATE)")
    assert typ == "OK" and len(data) == 4, data
    assert b"UID 1 " in data[0] and b"FLAGS ()" in data[0], data
    assert b'INTERNALDATE "' in data[0] and b"RFC822.SIZE " in data[0], data
    # Bodies, byte for byte (after the store's trace lines).
    for i, b in enumerate(bodies + [big], start=1):
        label, got = fetch_one(c, str(i), "(BODY.PEEK[])")
        assert popstorelib.strip_trace(got) == b, (i, got[:200])
        assert b"BODY[] {" in label, label
    # Sections: HEADER, TEXT, HEADER.FIELDS (.NOT), partial.
    label, full = fetch_one(c, "2", "(BODY.PEEK[])")
    split = full.index(b"\r\n\r\n") + 4
    assert fetch_one(c, "2", "(BODY.PEEK[HEADER])")[1] == full[:split]
    assert fetch_one(c, "2", "(BODY.PEEK[TEXT])")[1] == full[split:]
    label, fields = fetch_one(c, "2", "(BODY.PEEK[HEADER.FIELDS (SUBJECT x-tag)])")
    assert fields == b"Subject: second\r\nX-Tag: a\r\n  folded\r\n\r\n", fields
    assert b"BODY[HEADER.FIELDS (SUBJECT x-tag)]" in label, label
    label, rest = fetch_one(c, "2", "(BODY.PEEK[HEADER.FIELDS.NOT (Received Return-Path)])")
    assert rest.startswith(b"From: sender@remote.test\r\n"), rest
    label, part = fetch_one(c, "2", "(BODY.PEEK[]<10.20>)")
    assert part == full[10:30] and b"BODY[]<10>" in label, (label, part)
    label, part = fetch_one(c, "2", "(BODY.PEEK[TEXT]<5000.10>)")
    assert part == b"", part
    assert fetch_one(c, "2", "(RFC822.HEADER)")[1] == full[:split]
    # A message without MIME: part 1 is its text; bad sections are BAD,
    # and the session goes on.
    assert fetch_one(c, "1", "(BODY.PEEK[1])")[1] == fetch_one(c, "1", "(BODY.PEEK[TEXT])")[1]
    for item in ("(BODY.PEEK[MIME])", "(BODY.PEEK[1.])", "(BINARY.PEEK[TEXT])",
                 "(BODY.PEEK[0])", "(BINARY.SIZE[1]<0.5>)"):
        try:
            c.fetch("1", item)
            raise AssertionError(f"{item} answered")
        except imaplib.IMAP4.error as e:
            assert "invalid section" in str(e), e
    # BODY[] sets \Seen and says so.
    typ, data = c.fetch("1", "(BODY[])")
    assert data[1] == b" FLAGS (\\Seen))", data
    typ, data = c.fetch("1", "(FLAGS)")
    assert data == [b"1 (FLAGS (\\Seen))"], data
    # STORE: +FLAGS with a keyword, -FLAGS, .SILENT, UID STORE.
    typ, data = c.store("2:3", "+FLAGS", "(\\Flagged $Work)")
    assert typ == "OK" and len(data) == 2, data
    assert b"\\Flagged" in data[0] and b"$Work" in data[0], data
    typ, data = c.store("3", "-FLAGS", "(\\Flagged)")
    assert data == [b"3 (FLAGS ($Work))"], data
    typ, data = c.store("2", "+FLAGS.SILENT", "(\\Answered)")
    assert typ == "OK" and data == [None], data
    typ, data = c.uid("STORE", "4", "+FLAGS", "(\\Deleted)")
    assert b"UID 4" in data[0], data
    try:
        c.store("1", "+FLAGS", "(\\Recent)")
        raise AssertionError("\\Recent stored")
    except imaplib.IMAP4.error as e:
        assert "STORE takes" in str(e), e
    # The FLAGS in SELECT name the keyword now.
    typ, data = c.select("INBOX")
    assert b"$Work" in c.untagged_responses["FLAGS"][0], c.untagged_responses
    # COPY with COPYUID; MOVE with EXPUNGE; a missing folder: TRYCREATE.
    ok(c.create("Saved"))
    typ, data = c.copy("1:2", "Saved")
    assert typ == "OK" and b"[COPYUID " in data[0] and b" 1:2 1:2]" in data[0], data
    typ, data = c.copy("1", "NoSuch")
    assert typ == "NO" and b"[TRYCREATE]" in data[0], data
    typ, data = c._simple_command("MOVE", "3", "Saved")
    assert typ == "OK", (typ, data)
    assert c.untagged_responses.pop("EXPUNGE") == [b"3"], c.untagged_responses
    # EXPUNGE: the \Deleted one (now message 3, uid 4).
    typ, data = c.expunge()
    assert typ == "OK" and data == [b"3"], data
    typ, data = c.fetch("1:*", "(UID)")
    assert data == [b"1 (UID 1)", b"2 (UID 2)"], data
    # The copies are whole, with their flags.
    typ, data = c.select("Saved")
    assert data == [b"3"], data
    label, got = fetch_one(c, "3", "(BODY.PEEK[])")
    assert popstorelib.strip_trace(got) == bodies[2], got[:100]
    typ, data = c.fetch("2", "(FLAGS)")
    assert b"$Work" in data[0] and b"\\Answered" in data[0], data
    # UID EXPUNGE only the named ones.
    c.store("1:2", "+FLAGS.SILENT", "(\\Deleted)")
    c.untagged_responses.pop("EXPUNGE", None)
    typ, data = c.uid("EXPUNGE", "2")     # imaplib returns FETCH responses
    assert typ == "OK" and c.untagged_responses.pop("EXPUNGE") == [b"2"], data
    typ, data = c.fetch("1:*", "(UID)")
    assert data == [b"1 (UID 1)", b"2 (UID 3)"], data
    # APPEND with flags and a date; APPENDUID; read back exactly.
    msg = message("appended", "draft body\r\n")
    typ, data = c.append("Drafts", "(\\Draft $Later)", '"05-Dec-2026 09:30:00 +0100"', msg)
    assert typ == "OK" and b"[APPENDUID " in data[0], data
    typ, data = c.append("NoSuch", None, None, msg)
    assert typ == "NO" and b"[TRYCREATE]" in data[0], data
    typ, data = c.select("Drafts")
    assert data == [b"1"], data
    typ, data = c.fetch("1", "(FLAGS INTERNALDATE BODY.PEEK[])")
    meta = data[0][0]
    assert b"\\Draft" in meta and b"$Later" in meta, meta
    assert b'"05-Dec-2026 08:30:00 +0000"' in meta, meta
    assert data[0][1] == msg, data
    # Bad sets.
    s = env.raw("s1", "imap")
    r = Lines(s)
    r.line()
    assert r.cmd(f"a LOGIN {user} {PW}").startswith(b"a OK ")
    line = r.cmd("b SELECT INBOX")
    while not line.startswith(b"b "):
        line = r.line()
    assert line == b"b OK [READ-WRITE] SELECT completed.", line
    assert r.cmd("c FETCH 9 (UID)") == b"c BAD Invalid message sequence number."
    assert r.cmd("d FETCH x (UID)") == b"d BAD Invalid sequence set."
    line = r.cmd("e UID FETCH 100:200 (UID)")
    assert line == b"e OK UID FETCH completed.", line
    s.close()
    c.logout()
    # curl fetches a message by UID (UID FETCH ... BODY[]).
    out = subprocess.run(
        ["curl", "-sS", "--max-time", "30", "-u", f"{user}:{PW}",
         f"imap://127.0.0.1:{env.ports['s1']['imap']}/INBOX;UID=2"],
        capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert popstorelib.strip_trace(out.stdout) == bodies[1], out.stdout[:200]


def test_fetchmail(env, h):
    """fetchmail over IMAP fetches a mailbox and deletes what it fetched
    (\\Deleted and EXPUNGE)."""
    user = f"fred@{D}"
    for i in range(3):
        env.deliver("s1", "s@remote.test", [user],
                    message(f"fetchmail {i}", f"body {i}\r\n.dot {i}\r\n"))
    mbox = os.path.join(h.tmpdir, "fetched.mbox")
    rc = os.path.join(h.tmpdir, "fetchmailrc")
    with open(rc, "w") as f:
        f.write(f"poll 127.0.0.1 protocol imap port {env.ports['s1']['imap']}\n"
                f'  user "{user}" password "{PW}" is "tester" here\n'
                f'  sslproto "" fetchall nokeep\n'
                f"  mda \"/bin/sh -c 'cat >> {mbox}'\"\n")
    os.chmod(rc, 0o600)
    r = subprocess.run(["fetchmail", "-f", rc, "--nosyslog", "--pidfile",
                        os.path.join(h.tmpdir, "fetchmail.pid"), "-v"],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, HOME=h.tmpdir))
    assert r.returncode == 0, r.stdout + r.stderr
    got = open(mbox, "rb").read()
    for i in range(3):
        assert b"Subject: fetchmail %d" % i in got, got[:500]
        assert b".dot %d" % i in got, got[:500]
    c = env.imap("s1", user=user, password=PW)
    typ, data = c.select("INBOX")
    assert data == [b"0"], ("fetchmail's deletions were not applied", data)
    c.logout()


def test_getmail(env, h):
    """getmail6 over IMAP and over implicit TLS: each message once into a
    maildir; run again, nothing new (it remembers UIDs); with delete, the
    mailbox is emptied."""
    user = f"olga@{D}"
    bodies = [message(f"getmail {i}", f"body {i}\r\n.dot {i}\r\n") for i in range(3)]
    for b in bodies:
        env.deliver("s1", "s@remote.test", [user], b)
    # Outside the harness's private directory: getmail's delivery user
    # must reach the maildir.
    top = tempfile.mkdtemp(prefix="mt-getmail-")
    os.chmod(top, 0o755)
    try:
        getmail_runs(env, user, bodies, top)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def getmail_runs(env, user, bodies, top):
    del bodies  # (what they hold is checked by subject and body)
    maildir = os.path.join(top, "Maildir")
    for sub in ("cur", "new", "tmp"):
        os.makedirs(os.path.join(maildir, sub))
    # getmail delivers as root only through another user (its own rule).
    as_user = ""
    if os.geteuid() == 0:
        as_user = "user = nobody\n"
        for root, dirs, _ in os.walk(maildir):
            for d in [root] + [os.path.join(root, x) for x in dirs]:
                shutil.chown(d, "nobody")

    def run(kind, port, delete):
        rc = os.path.join(top, f"getmailrc-{kind}")
        with open(rc, "w") as f:
            f.write(f"[retriever]\ntype = {kind}\nserver = 127.0.0.1\nport = {port}\n"
                    f"username = {user}\npassword = {PW}\nmailboxes = (\"INBOX\",)\n")
            f.write(f"\n[destination]\ntype = Maildir\npath = {maildir}/\n{as_user}"
                    f"\n[options]\nread_all = false\ndelete = {str(delete).lower()}\n"
                    "message_log_verbose = true\n")
        r = subprocess.run(["getmail", "--rcfile", rc, "--getmaildir", top],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    def stored():
        return sorted(open(os.path.join(maildir, "new", n), "rb").read()
                      for n in os.listdir(os.path.join(maildir, "new")))

    out = run("SimpleIMAPRetriever", env.ports["s1"]["imap"], False)
    got = stored()
    assert len(got) == 3, (out, len(got))
    for i in range(3):
        # (getmail writes the header again and LF line ends: the subject
        # and the body, dot line included, must be there once)
        hits = [g for g in got if b"\nSubject: getmail %d\n" % i in g and
                g.endswith(b"\n\nbody %d\n.dot %d\n" % (i, i))]
        assert len(hits) == 1, (i, [g[-200:] for g in got])
    # Again: it remembers the UIDs it has, nothing new.
    run("SimpleIMAPRetriever", env.ports["s1"]["imap"], False)
    assert len(stored()) == 3
    # Over implicit TLS (another server to getmail: all four are new to
    # it), deleting what it fetched.
    env.deliver("s1", "s@remote.test", [user], message("getmail 3", "late\r\n"))
    run("SimpleIMAPSSLRetriever", env.ports["s1"]["imaps"], True)
    got = stored()
    assert len(got) == 7 and sum(b"\nSubject: getmail 3\n" in g for g in got) == 1, len(got)
    c = env.imap("s1", user=user, password=PW)
    typ, data = c.select("INBOX")
    assert data == [b"0"], ("getmail's deletions were not applied", data)
    c.logout()


def idle_expect(r, pattern, timeout=10.0):
    """Lines pushed during IDLE until one matches pattern (bytes)."""
    r.sock.settimeout(timeout)
    got = []
    while True:
        line = r.line()
        assert line is not None, ("closed while idling", got)
        got.append(line)
        if pattern in line:
            return got


def test_concurrent(env):
    """Several sessions on one mailbox: each sees the others' changes at
    NOOP and as they happen in IDLE; POP3 beside them."""
    user = f"gina@{D}"
    for i in range(2):
        env.deliver("s1", "x@remote.test", [user], message(f"c{i}", f"body {i}\r\n"))
    a = env.imap("s1", user=user, password=PW)
    b = env.imap("s1", user=user, password=PW)
    assert a.select("INBOX")[1] == [b"2"]
    assert b.select("INBOX")[1] == [b"2"]
    # B flags and expunges; A sees it at NOOP.
    ok(b.store("2", "+FLAGS", "(\\Flagged)"))
    ok(b.store("1", "+FLAGS", "(\\Deleted)"))
    ok(b.expunge())
    a.untagged_responses.clear()
    ok(a.noop())
    assert a.untagged_responses.get("EXPUNGE") == [b"1"], a.untagged_responses
    assert a.untagged_responses.get("FETCH") == [b"1 (FLAGS (\\Flagged) UID 2)"], \
        a.untagged_responses
    # A delivery: EXISTS at the next NOOP.
    env.deliver("s1", "x@remote.test", [user], message("c2", "body 2\r\n"))
    a.untagged_responses.clear()
    ok(a.noop())
    assert a.untagged_responses.get("EXISTS") == [b"2"], a.untagged_responses
    typ, data = a.fetch("2", "(UID)")
    assert data == [b"2 (UID 3)"], data
    # IDLE: a delivery and a POP3 QUIT's deletion pushed as they happen.
    s = env.raw("s1", "imap")
    r = Lines(s)
    r.line()
    assert r.cmd(f"a LOGIN {user} {PW}").startswith(b"a OK ")
    line = r.cmd("b SELECT INBOX")
    while not line.startswith(b"b "):
        line = r.line()
    assert r.cmd("c IDLE") == b"+ idling"
    env.deliver("s1", "x@remote.test", [user], message("c3", "body 3\r\n"))
    assert idle_expect(r, b"EXISTS")[-1] == b"* 3 EXISTS"
    p = env.pop("s1", user=user, password=PW)
    p.dele(1)
    p.quit()
    assert idle_expect(r, b"EXPUNGE")[-1] == b"* 1 EXPUNGE"
    # Flags set by another IMAP session, pushed too.
    ok(b.noop())
    ok(b.store("1", "+FLAGS", "($Pushed)"))
    pushed = idle_expect(r, b"FETCH")
    assert any(b"$Pushed" in l for l in pushed), pushed
    # The new keyword is announced (FLAGS, PERMANENTFLAGS), then DONE.
    line = r.cmd("DONE")
    rest = []
    while not line.startswith(b"c "):
        rest.append(line)
        line = r.line()
    assert line == b"c OK IDLE terminated.", (line, rest)
    assert any(l.startswith(b"* FLAGS (") and b"$Pushed" in l for l in pushed + rest), \
        (pushed, rest)
    assert r.cmd("d NOOP") == b"d OK NOOP completed."
    # A bad IDLE ending: BAD, and the session goes on.
    assert r.cmd("e IDLE") == b"+ idling"
    assert r.cmd("STOP") == b"e BAD Expected DONE."
    assert r.cmd("f NOOP") == b"f OK NOOP completed."
    s.close()
    # A FETCH of a message another session expunged (A has not seen the
    # EXPUNGE yet): no literal promised, NO [EXPUNGEISSUED], A goes on.
    a.select("INBOX")
    b.select("INBOX")
    ok(b.store("1", "+FLAGS", "(\\Deleted)"))
    ok(b.expunge())
    typ, data = a.fetch("1", "(UID BODY.PEEK[])")
    assert typ == "NO" and b"[EXPUNGEISSUED]" in data[-1], (typ, data)
    a.untagged_responses.clear()
    ok(a.noop())
    assert a.untagged_responses.get("EXPUNGE") == [b"1"], a.untagged_responses
    a.logout()
    b.logout()


def test_search(env):
    user = f"hank@{D}"
    msgs = [message("Quarterly report", "numbers inside\r\n"),
            message("lunch", "see you at noon\r\n", "Cc: team@example.test\r\n"),
            message("big one", b"filler line of text\r\n" * 15000 + b"the NEEDLE is here\r\n"),
            message("report draft", "draft body\r\n")]
    for m in msgs:
        env.deliver("s1", "x@remote.test", [user], m)
    c = env.imap("s1", user=user, password=PW)
    c.select("INBOX")
    c.store("1,4", "+FLAGS", "(\\Seen)")
    c.store("4", "+FLAGS", "($Work)")

    def search(*criteria):
        typ, data = c.search(None, *criteria)
        assert typ == "OK", (typ, data)
        return data[0].decode().split()

    assert search("ALL") == ["1", "2", "3", "4"]
    assert search("SEEN") == ["1", "4"] and search("UNSEEN") == ["2", "3"]
    assert search("KEYWORD", "$Work") == ["4"]
    assert search("SUBJECT", "report") == ["1", "4"]
    assert search("SEEN", "SUBJECT", "draft") == ["4"]
    assert search("OR", "SUBJECT", "lunch", "SUBJECT", "big") == ["2", "3"]
    assert search("CC", "team") == ["2"]
    assert search("FROM", "sender@remote.test") == ["1", "2", "3", "4"]
    assert search("BODY", "needle") == ["3"]         # 330 KB into the message
    assert search("TEXT", "noon") == ["2"] and search("TEXT", "lunch") == ["2"]
    assert search("LARGER", "100000") == ["3"] and search("NOT", "SMALLER", "100000") == ["3"]
    assert search("BEFORE", "1-Jan-2000") == [] and search("SINCE", "1-Jan-2000") == ["1", "2", "3", "4"]
    assert search("2:3", "UNSEEN") == ["2", "3"]
    typ, data = c.uid("SEARCH", "BODY", "draft")
    assert data == [b"4"], data
    # ESEARCH (RFC 4731).
    typ, data = c._simple_command("SEARCH", "RETURN", "(MIN MAX COUNT)", "UNSEEN")
    got = c._untagged_response(typ, data, "ESEARCH")[1]
    assert typ == "OK" and got[0].endswith(b" MIN 2 MAX 3 COUNT 2"), got
    typ, data = c._simple_command("UID", "SEARCH", "RETURN", "()", "SEEN")
    got = c._untagged_response(typ, data, "ESEARCH")[1]
    assert got[0].endswith(b" UID ALL 1,4"), got
    # Errors.
    typ, data = c.search(None, "CHARSET", "KOI8-R", "ALL")
    assert typ == "NO" and b"[BADCHARSET" in data[0], (typ, data)
    try:
        c.search(None, "FROBNICATE")
        raise AssertionError("SEARCH FROBNICATE answered")
    except imaplib.IMAP4.error as e:
        assert "unknown search key" in str(e), e
    c.logout()


def test_condstore(env):
    """RFC 7162 CONDSTORE: MODSEQs in SELECT, FETCH, STORE, SEARCH."""
    user = f"kim@{D}"
    for i in range(3):
        env.deliver("s1", "x@remote.test", [user], message(f"cs {i}", f"body {i}\r\n"))
    c = env.imap("s1", user=user, password=PW)
    typ, data = c._simple_command("ENABLE", "CONDSTORE")
    assert c.untagged_responses.pop("ENABLED") == [b"CONDSTORE"], data
    typ, data = c.select("INBOX")
    highest = int(c.untagged_responses["HIGHESTMODSEQ"][0])
    typ, data = c.fetch("1:*", "(MODSEQ)")
    modseqs = [int(d.split(b"MODSEQ (")[1].split(b")")[0]) for d in data]
    assert len(modseqs) == 3 and max(modseqs) == highest, (data, highest)
    # UNCHANGEDSINCE: applied while unchanged, refused ([MODIFIED]) after.
    typ, data = c._simple_command("STORE", "1", f"(UNCHANGEDSINCE {modseqs[0]})",
                                  "+FLAGS", "(\\Seen)")
    assert typ == "OK", data
    got = c.untagged_responses.pop("FETCH")[0]
    new = int(got.split(b"MODSEQ (")[1].split(b")")[0])
    assert new > highest and b"\\Seen" in got, got
    typ, data = c._simple_command("STORE", "1", f"(UNCHANGEDSINCE {modseqs[0]})",
                                  "+FLAGS", "(\\Flagged)")
    assert typ == "OK" and b"[MODIFIED 1]" in data[0], data
    typ, data = c.fetch("1", "(FLAGS)")
    assert b"\\Flagged" not in data[0], data
    # CHANGEDSINCE: only what changed, with its MODSEQ.
    typ, data = c._simple_command("FETCH", "1:*", "(FLAGS)", f"(CHANGEDSINCE {highest})")
    got = c.untagged_responses.pop("FETCH")
    assert len(got) == 1 and got[0].startswith(b"1 (") and b"MODSEQ" in got[0], got
    # SEARCH MODSEQ answers the highest MODSEQ it found.
    typ, data = c.search(None, "MODSEQ", str(highest + 1))
    assert data == [f"1 (MODSEQ {new})".encode()], data
    typ, data = c.status("INBOX", "(HIGHESTMODSEQ)")
    assert f"HIGHESTMODSEQ {new}".encode() in data[0], data
    c.logout()


def test_qresync(env):
    """RFC 7162 QRESYNC: a client that knew the mailbox at (UIDVALIDITY,
    MODSEQ) learns what vanished and changed since, in SELECT and UID
    FETCH; expunges are VANISHED."""
    user = f"max@{D}"
    for i in range(4):
        env.deliver("s1", "x@remote.test", [user], message(f"q {i}", f"body {i}\r\n"))
    a = env.imap("s1", user=user, password=PW)
    typ, data = a._simple_command("ENABLE", "QRESYNC")
    assert a.untagged_responses.pop("ENABLED") == [b"QRESYNC"], data
    a.select("INBOX")
    validity = int(a.untagged_responses["UIDVALIDITY"][0])
    known = int(a.untagged_responses["HIGHESTMODSEQ"][0])
    a.logout()
    # Meanwhile: uid 2 expunged, uid 3 flagged.
    b = env.imap("s1", user=user, password=PW)
    b.select("INBOX")
    ok(b.store("2", "+FLAGS", "(\\Deleted)"))
    ok(b.expunge())
    ok(b.store("2", "+FLAGS", "($Later)"))     # uid 3 is message 2 now
    b.logout()
    s = env.raw("s1", "imap")
    r = Lines(s)
    r.line()
    assert r.cmd(f"a LOGIN {user} {PW}").startswith(b"a OK ")
    assert r.cmd("b ENABLE QRESYNC") == b"* ENABLED QRESYNC"
    assert r.line() == b"b OK ENABLE completed."
    lines = [r.cmd(f"c SELECT INBOX (QRESYNC ({validity} {known}))")]
    while not lines[-1].startswith(b"c "):
        lines.append(r.line())
    assert lines[-1] == b"c OK [READ-WRITE] SELECT completed.", lines
    assert b"* VANISHED (EARLIER) 2" in lines, lines
    changed = [l for l in lines if b" FETCH (" in l]
    assert len(changed) == 1 and b"UID 3 " in changed[0] and b"$Later" in changed[0] \
        and b"MODSEQ (" in changed[0], lines
    # Own expunges are VANISHED now (RFC 7162 3.1: UID and MODSEQ in the
    # STORE's FETCH, also without UID STORE).
    assert r.cmd("d STORE 1 +FLAGS.SILENT (\\Deleted)").startswith(b"* 1 FETCH (UID 1 MODSEQ")
    assert r.line().startswith(b"d OK")
    assert r.cmd("e EXPUNGE") == b"* VANISHED 1"
    assert r.line() == b"e OK EXPUNGE completed."
    # UID FETCH (CHANGEDSINCE ... VANISHED).
    lines = [r.cmd(f"f UID FETCH 1:* (FLAGS) (CHANGEDSINCE {known} VANISHED)")]
    while not lines[-1].startswith(b"f "):
        lines.append(r.line())
    assert lines[0] == b"* VANISHED (EARLIER) 1:2", lines
    assert lines[-1] == b"f OK UID FETCH completed.", lines
    # Without ENABLE QRESYNC the parameter is refused.
    s.close()
    c = env.imap("s1", user=user, password=PW)
    try:
        c._simple_command("SELECT", "INBOX", f"(QRESYNC ({validity} {known}))")
        raise AssertionError("QRESYNC without ENABLE")
    except imaplib.IMAP4.error as e:
        assert "ENABLE QRESYNC" in str(e), e
    c.logout()


def test_quota(env):
    """RFC 9208 QUOTA against the directory's mailtierQuota (40K here);
    APPEND and COPY keep to it; APPENDLIMIT is max_message_size."""
    user = f"lee@{D}"
    env.deliver("s1", "x@remote.test", [user], message("q", "x" * 22000))
    c = env.imap("s1", user=user, password=PW)
    typ, caps = c.capability()
    assert b"QUOTA" in caps[0] and b"APPENDLIMIT=8388608" in caps[0], caps
    typ, data = c.getquotaroot("INBOX")
    assert typ == "OK" and data[0] == [b'INBOX ""'], data
    used = int(data[1][0].split(b"STORAGE ")[1].split()[0])
    assert data[1][0].endswith(b" 40)") and 22 <= used <= 23, data
    typ, data = c.getquota('""')
    assert typ == "OK" and b"STORAGE" in data[0], data
    typ, data = c.append("INBOX", None, None, message("big", "y" * 35000))
    assert typ == "NO" and b"[OVERQUOTA]" in data[0], data
    ok(c.append("INBOX", None, None, message("small", "z" * 1000)))
    c.select("INBOX")
    typ, data = c.copy("1", "Archive")
    assert typ == "NO" and b"[OVERQUOTA]" in data[0], data
    typ, data = c._simple_command("MOVE", "1", "Archive")
    assert typ == "OK", data     # a move adds nothing
    typ, data = c.getquota('"other"')
    assert typ == "NO", data
    typ, data = c.setquota('""', "(STORAGE 100)")
    assert typ == "NO" and b"[NOPERM]" in data[0], data
    c.logout()


def maildir_files(root, folder):
    """{name: flags} of a maildir folder's cur/ and new/ messages."""
    out = {}
    for sub in ("cur", "new"):
        d = os.path.join(root, folder, sub)
        for f in os.listdir(d) if os.path.isdir(d) else ():
            out[f] = f.split(":2,")[1] if ":2," in f else ""
    return out


def test_mbsync(env, h):
    """isync/mbsync syncs folders and flags both ways; a second run after
    the changes finds nothing more to do."""
    if shutil.which("mbsync") is None:
        raise mtharness.Skip("mbsync is not installed (Debian package isync)")
    user = f"ivan@{D}"
    for i in range(3):
        env.deliver("s1", "x@remote.test", [user], message(f"sync {i}", f"body {i}\r\n"))
    c = env.imap("s1", user=user, password=PW)
    ok(c.create("Work"))
    ok(c.append("Work", "(\\Flagged)", None, message("work item", "do it\r\n")))
    c.logout()
    local = os.path.join(h.tmpdir, "maildir")
    os.makedirs(local)
    rc = os.path.join(h.tmpdir, "mbsyncrc")
    with open(rc, "w") as f:
        f.write(f"IMAPAccount acct\nHost 127.0.0.1\nPort {env.ports['s1']['imap']}\n"
                f"User {user}\nPass {PW}\nSSLType None\nAuthMechs LOGIN\n\n"
                "IMAPStore remote\nAccount acct\n\n"
                f"MaildirStore local\nPath {local}/\nInbox {local}/INBOX\n"
                "SubFolders Verbatim\n\n"
                "Channel ch\nFar :remote:\nNear :local:\nPatterns INBOX Work\n"
                f"Create Both\nExpunge Both\nSyncState *\nSync All\n")

    def mbsync():
        r = subprocess.run(["mbsync", "-c", rc, "-V", "-a"], capture_output=True,
                           text=True, timeout=120, env=dict(os.environ, HOME=h.tmpdir))
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout + r.stderr

    mbsync()
    inbox = maildir_files(local, "INBOX")
    work = maildir_files(local, "Work")
    assert len(inbox) == 3 and len(work) == 1, (inbox, work)
    assert list(work.values()) == ["F"], work
    # Local changes: one seen, one deleted (trashed), one new in Work.
    names = sorted(inbox)
    cur = os.path.join(local, "INBOX", "cur")
    for sub in ("cur", "new"):
        for n in names:
            p = os.path.join(local, "INBOX", sub, n)
            if os.path.exists(p) and n == names[0]:
                os.rename(p, os.path.join(cur, n.split(":2,")[0] + ":2,S"))
            elif os.path.exists(p) and n == names[1]:
                os.rename(p, os.path.join(cur, n.split(":2,")[0] + ":2,T"))
    with open(os.path.join(local, "Work", "new", "12345.local.new"), "wb") as f:
        f.write(message("from the laptop", "written offline\r\n"))
    mbsync()
    # The server has them: \Seen on one, one expunged, one appended.
    c = env.imap("s1", user=user, password=PW)
    typ, data = c.select("INBOX")
    assert data == [b"2"], data
    typ, data = c.search(None, "SEEN")
    assert len(data[0].split()) == 1, data
    typ, data = c.select("Work")
    assert data == [b"2"], data
    typ, data = c.search(None, "SUBJECT", "laptop")
    assert data[0] != b"", data
    # A server-side change comes down.
    ok(c.store("1", "+FLAGS", "(\\Seen)"))
    c.logout()
    mbsync()
    work = maildir_files(local, "Work")
    assert sorted(work.values()) == ["", "FS"], work
    # Nothing left to do: a third run changes nothing on either side.
    before = (maildir_files(local, "INBOX"), maildir_files(local, "Work"))
    mbsync()
    assert (maildir_files(local, "INBOX"), maildir_files(local, "Work")) == before


def test_offlineimap(env, h):
    """offlineimap3 mirrors the folders into a maildir and back."""
    if shutil.which("offlineimap") is None:
        raise mtharness.Skip("offlineimap is not installed (Debian package offlineimap3)")
    user = f"judy@{D}"
    for i in range(2):
        env.deliver("s1", "x@remote.test", [user], message(f"oi {i}", f"body {i}\r\n"))
    local = os.path.join(h.tmpdir, "oimap")
    rc = os.path.join(h.tmpdir, "offlineimaprc")
    with open(rc, "w") as f:
        f.write("[general]\naccounts = a\nmetadata = " + os.path.join(h.tmpdir, "oimeta") +
                "\n\n[Account a]\nlocalrepository = l\nremoterepository = r\n\n"
                f"[Repository l]\ntype = Maildir\nlocalfolders = {local}\n\n"
                f"[Repository r]\ntype = IMAP\nremotehost = 127.0.0.1\n"
                f"remoteport = {env.ports['s1']['imap']}\nremoteuser = {user}\n"
                f"remotepass = {PW}\nssl = no\nstarttls = no\n")

    def run():
        r = subprocess.run(["offlineimap", "-c", rc, "-o", "-u", "basic"],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, HOME=h.tmpdir))
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout + r.stderr

    run()
    assert len(maildir_files(local, "INBOX")) == 2, os.listdir(local)
    assert os.path.isdir(os.path.join(local, "Sent")), os.listdir(local)
    with open(os.path.join(local, "Sent", "new", "1.local"), "wb") as f:
        f.write(message("sent offline", "hello\r\n"))
    run()
    c = env.imap("s1", user=user, password=PW)
    typ, data = c.select("Sent")
    assert data == [b"1"], data
    c.logout()


MIME_PARTS = {
    "1.1": b"Plain caf=C3=A9 text,\r\nsecond line=\r\n continued",
    "1.2": b"<p>caf=C3=A9</p>",
    "2": base64.encodebytes(bytes(range(256)) * 8).replace(b"\n", b"\r\n").rstrip(),
    "3.1": b"forwarded body\r\n",
    "4": b"begin 644 x\r\n`\r\nend",
}


def mime_message():
    """A multipart/mixed message as mail clients send them."""
    return (b"From: \"Ann Example\" <ann@example.test>\r\n"
            b"To: Bob <bob@example.test>, carl@example.test\r\n"
            b"Subject: =?utf-8?q?r=C3=A9sum=C3=A9?=\r\n"
            b"Date: Tue, 1 Dec 2026 10:00:00 +0000\r\n"
            b"Message-ID: <mime-1@example.test>\r\n"
            b"MIME-Version: 1.0\r\n"
            b"Content-Type: multipart/mixed; boundary=\"outer-b\"\r\n"
            b"\r\n"
            b"This is a multi-part message in MIME format.\r\n"
            b"--outer-b\r\n"
            b"Content-Type: multipart/alternative; boundary=alt\r\n"
            b"\r\n"
            b"--alt\r\n"
            b"Content-Type: text/plain; charset=utf-8\r\n"
            b"Content-Transfer-Encoding: quoted-printable\r\n"
            b"\r\n" + MIME_PARTS["1.1"] + b"\r\n"
            b"--alt\r\n"
            b"Content-Type: text/html; charset=utf-8\r\n"
            b"Content-Transfer-Encoding: quoted-printable\r\n"
            b"\r\n" + MIME_PARTS["1.2"] + b"\r\n"
            b"--alt--\r\n"
            b"--outer-b\r\n"
            b"Content-Type: application/octet-stream; name=\"bytes.bin\"\r\n"
            b"Content-Disposition: attachment; filename=\"bytes.bin\"\r\n"
            b"Content-Transfer-Encoding: base64\r\n"
            b"\r\n" + MIME_PARTS["2"] + b"\r\n"
            b"--outer-b\r\n"
            b"Content-Type: message/rfc822\r\n"
            b"\r\n"
            b"From: dan@example.test\r\n"
            b"Subject: inner\r\n"
            b"\r\n" + MIME_PARTS["3.1"] + b"\r\n"
            b"--outer-b\r\n"
            b"Content-Type: application/x-uu\r\n"
            b"Content-Transfer-Encoding: x-uuencode\r\n"
            b"\r\n" + MIME_PARTS["4"] + b"\r\n"
            b"--outer-b--\r\n")


def test_mime(env):
    import quopri
    user = f"nora@{D}"
    msg = mime_message()
    env.deliver("s1", "x@remote.test", [user], msg)
    c = env.imap("s1", user=user, password=PW)
    ok(c.append("Archive", None, None, msg))
    typ, data = c.select("INBOX")
    assert data == [b"1"], data
    typ, data = c.fetch("1", "(ENVELOPE)")
    assert typ == "OK", data
    env_line = data[0] if isinstance(data[0], bytes) else data[0][0]
    assert (b'ENVELOPE ("Tue, 1 Dec 2026 10:00:00 +0000" "=?utf-8?q?r=C3=A9sum=C3=A9?=" '
            b'(("Ann Example" NIL "ann" "example.test"))') in env_line, env_line
    assert (b'(("Bob" NIL "bob" "example.test")(NIL NIL "carl" "example.test")) '
            b'NIL NIL NIL "<mime-1@example.test>")') in env_line, env_line
    typ, data = c.fetch("1", "(BODYSTRUCTURE)")
    bs = data[0] if isinstance(data[0], bytes) else data[0][0]
    size2 = len(MIME_PARTS["2"])
    for want in (b'(("text" "plain" ("charset" "utf-8") NIL NIL "quoted-printable" %d 3 NIL NIL NIL NIL)'
                 % len(MIME_PARTS["1.1"]),
                 b' "alternative" ("boundary" "alt") NIL NIL NIL)',
                 b'("application" "octet-stream" ("name" "bytes.bin") NIL NIL "base64" %d NIL '
                 b'("attachment" ("filename" "bytes.bin")) NIL NIL)' % size2,
                 b'("message" "rfc822" NIL NIL NIL "7bit" ',
                 b'(NIL "inner" ((NIL NIL "dan" "example.test"))',
                 b' "mixed" ("boundary" "outer-b") NIL NIL NIL)'):
        assert want in bs, (want, bs)
    # BODY is BODYSTRUCTURE without the extension data; FULL has it.
    typ, data = c.fetch("1", "(BODY)")
    body = data[0] if isinstance(data[0], bytes) else data[0][0]
    assert b'"alternative")' in body and b'"mixed"))' in body and b'("boundary"' not in body, body
    typ, data = c.fetch("1", "FULL")
    full = data[0] if isinstance(data[0], bytes) else data[0][0]
    assert b"ENVELOPE (" in full and b"BODY ((" in full and b"RFC822.SIZE" in full, full

    # Part sections byte for byte.
    for section, want in (("1.1", MIME_PARTS["1.1"]), ("1.2", MIME_PARTS["1.2"]),
                          ("2", MIME_PARTS["2"]), ("3.1", MIME_PARTS["3.1"]),
                          ("3.TEXT", MIME_PARTS["3.1"]),
                          ("3.HEADER", b"From: dan@example.test\r\nSubject: inner\r\n\r\n"),
                          ("3.HEADER.FIELDS (SUBJECT)", b"Subject: inner\r\n\r\n"),
                          ("1.2.MIME", b"Content-Type: text/html; charset=utf-8\r\n"
                           b"Content-Transfer-Encoding: quoted-printable\r\n\r\n"),
                          ("4", MIME_PARTS["4"])):
        _, got = fetch_one(c, "1", f"(BODY.PEEK[{section}])")
        assert got == want, (section, got[:200], want[:200])
    _, got = fetch_one(c, "1", "(BODY.PEEK[3]<0.10>)")
    assert got == b"From: dan@", got
    whole = fetch_one(c, "1", "(BODY.PEEK[3])")[1]
    assert whole == (b"From: dan@example.test\r\nSubject: inner\r\n\r\n" +
                     MIME_PARTS["3.1"]), whole
    typ, data = c.fetch("1", "(BODY.PEEK[9] BODY.PEEK[2.1])")
    line = data[0] if isinstance(data[0], bytes) else data[0][0]
    assert b"BODY[9] NIL" in line and b"BODY[2.1] NIL" in line, data

    # BINARY: decoded as Python's own decoders decode.
    _, got = fetch_one(c, "1", "(BINARY.PEEK[2])")
    assert got == bytes(range(256)) * 8, got[:40]
    _, got = fetch_one(c, "1", "(BINARY.PEEK[1.1])")
    assert got == quopri.decodestring(MIME_PARTS["1.1"]).replace(b"\n", b"\r\n").replace(
        b"\r\r\n", b"\r\n"), got
    typ, data = c.fetch("1", "(BINARY.SIZE[2] BINARY.SIZE[1.2] BINARY.SIZE[3.1])")
    line = data[0]
    assert b"BINARY.SIZE[2] 2048" in line, line
    assert b"BINARY.SIZE[1.2] %d" % len("<p>caf\u00e9</p>".encode()) in line, line
    assert b"BINARY.SIZE[3.1] %d" % len(MIME_PARTS["3.1"]) in line, line
    typ, data = c.fetch("1", "(BINARY.PEEK[4])")
    assert typ == "NO" and b"UNKNOWN-CTE" in data[-1], (typ, data)
    typ, data = c.fetch("1", "(FLAGS)")
    assert b"\\Seen" not in data[0], data      # PEEK set nothing
    # BINARY[] (not PEEK) sets \Seen, as BODY[] does.
    _, got = fetch_one(c, "1", "(BINARY[2])")
    typ, data = c.fetch("1", "(FLAGS)")
    assert b"\\Seen" in data[0], data
    try:
        c.fetch("1", "(BINARY[1.MIME])")
        raise AssertionError("BINARY[1.MIME] answered")
    except imaplib.IMAP4.error as e:
        assert "invalid section" in str(e), e

    # COPY shares the body and its structure; APPEND recorded its own.
    ok(c.copy("1", "Trash"))
    for folder in ("Trash", "Archive"):
        ok(c.select(folder))
        typ, data = c.fetch("*", "(BODYSTRUCTURE)")
        other = data[0] if isinstance(data[0], bytes) else data[0][0]
        assert bs.split(b"BODYSTRUCTURE", 1)[1] == other.split(b"BODYSTRUCTURE", 1)[1], \
            (folder, other)
        _, got = fetch_one(c, "*", "(BODY.PEEK[1.1])")
        assert got == MIME_PARTS["1.1"], (folder, got)
    c.logout()


def test_curl(env):
    # curl lists the mailboxes (LIST) after LOGIN, over imap:// and imaps://.
    out = subprocess.run(
        ["curl", "-sS", "--max-time", "30", "-u", f"carol@{D}:{PW}",
         f"imap://127.0.0.1:{env.ports['s1']['imap']}/"],
        capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout.decode()
    assert '"/" INBOX' in text and "Sent" in text and "Old" in text, text
    env.deliver("s1", "s@remote.test", [f"carol@{D}"], message("curl imaps", "over TLS\r\n"))
    c = env.imap("s1", user=f"carol@{D}", password=PW)
    ok(c.select("INBOX", readonly=True))
    typ, data = c.fetch("*", "(UID)")
    uid = int(data[-1].split(b"UID ")[1].rstrip(b")"))
    whole = fetch_one(c, str(uid), "(BODY.PEEK[])", uid=True)[1]
    c.logout()
    out = subprocess.run(
        ["curl", "-sS", "-k", "--max-time", "30", "-u", f"carol@{D}:{PW}",
         f"imaps://127.0.0.1:{env.ports['s1']['imaps']}/INBOX;UID={uid}"],
        capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == whole, (out.stdout[:200], whole[:200])


def test_append_selected(env):
    """RFC 9051 6.3.12: an APPEND to the selected mailbox announces the new
    message (EXISTS before the OK), and its UID can be used at once."""
    c = env.imap("s1", user=f"pat@{D}", password=PW)
    typ, data = c.select("INBOX")
    before = int(data[0])
    typ, data = c.append("INBOX", None, None, message("appended", "now\r\n"))
    assert typ == "OK", data
    uid = int(re.search(rb"APPENDUID \d+ (\d+)", data[0]).group(1))
    exists = c.untagged_responses.get("EXISTS")
    assert exists and int(exists[-1]) == before + 1, c.untagged_responses
    typ, data = c.uid("STORE", str(uid), "+FLAGS", "(\\Flagged)")
    assert typ == "OK" and data[0] is not None and b"\\Flagged" in data[0], data
    typ, data = c.uid("STORE", str(uid), "+FLAGS.SILENT", "(\\Deleted)")
    typ, data = c.uid("EXPUNGE", str(uid))
    assert typ == "OK", data
    c.logout()
    c = env.imap("s1", user=f"pat@{D}", password=PW)
    typ, data = c.select("INBOX")
    assert int(data[0]) == before, data
    c.logout()


def take(r, n):
    """n octets (a literal's) after the line r last read."""
    while len(r.buf) - r.pos < n:
        data = r.sock.recv(65536)
        assert data, "connection closed in a literal"
        r.buf += data
    out = bytes(r.buf[r.pos:r.pos + n])
    r.pos += n
    return out


def test_nul_octets(env):
    """RFC 9051 4.3.1 and RFC 3516 4.2-4.3 (#37 item 14): a message whose
    "binary" part holds NULs, APPENDed as a literal8, is sent in BODY[] as
    an ordinary literal with no NUL (each one 0x80, the size unchanged, as
    Dovecot does) and in BINARY[] as a literal8 with its octets as they
    are; a NUL-free BINARY[] stays an ordinary literal."""
    part = b"a\x00b\x00cde"
    msg = (b"From: x@remote.test\r\nSubject: nul\r\nMIME-Version: 1.0\r\n"
           b"Content-Type: multipart/mixed; boundary=b\r\n\r\n"
           b"--b\r\nContent-Type: application/octet-stream\r\n"
           b"Content-Transfer-Encoding: binary\r\n\r\n" + part +
           b"\r\n--b\r\nContent-Type: text/plain\r\n\r\nplain\r\n--b--\r\n")
    masked = msg.replace(b"\x00", b"\x80")
    r = Lines(env.raw("s1", proto="imap"))
    assert r.line().startswith(b"* OK"), "greeting"
    assert r.cmd(f"a1 LOGIN quinn@{D} {PW}").startswith(b"a1 OK")
    r.send(b"a2 APPEND INBOX ~{%d+}\r\n" % len(msg) + msg + b"\r\n")
    line = r.line()
    while line.startswith(b"* "):
        line = r.line()
    assert line.startswith(b"a2 OK"), line
    r.send(b"a3 SELECT INBOX\r\n")
    while not r.line().startswith(b"a3 "):
        pass

    def fetch(tag, items, literals):
        """FETCH 1 items: each literal's announcement and octets, and the
        line's rest."""
        r.send(b"%s FETCH 1 %s\r\n" % (tag, items))
        line, got = r.line(), []
        for _ in range(literals):
            m = re.search(rb"(~?\{\d+\})$", line)
            assert m, (items, line)
            n = int(m.group(1).strip(b"~{}"))
            got.append((m.group(1), take(r, n)))
            line = r.line()
        assert line.endswith(b")"), line
        assert r.line().startswith(tag + b" OK"), items
        return got

    got = fetch(b"a4", b"(BODY.PEEK[1] BINARY.PEEK[1] BINARY.SIZE[1])", 2)
    assert got == [(b"{7}", b"a\x80b\x80cde"), (b"~{7}", part)], got
    got = fetch(b"a5", b"(BODY.PEEK[] BINARY.PEEK[] RFC822.TEXT)", 3)
    text = masked[masked.index(b"\r\n\r\n") + 4:]
    assert got == [(b"{%d}" % len(msg), masked), (b"~{%d}" % len(msg), msg),
                   (b"{%d}" % len(text), text)], got
    # A part's partial, and a part without NULs: ordinary literals.
    got = fetch(b"a6", b"(BINARY.PEEK[1]<2.3> BINARY.PEEK[2] BODY.PEEK[1]<0.2>)", 3)
    assert got == [(b"~{3}", b"b\x00c"), (b"{5}", b"plain"), (b"{2}", b"a\x80")], got
    assert r.cmd(b"a7 LOGOUT").startswith(b"* BYE")


def test_search_from(env):
    """#37 item 16: FROM matches the envelope's address of a From: written
    with comments (RFC 9051 6.4.4), and the field's text still (a display
    name)."""
    user = f"rosa@{D}"
    for sender in ("<user (c)@ (c) domain.org>", '"John Smith" <js@x.test>',
                   "other@domain.org"):
        env.deliver("s1", "x@remote.test", [user],
                    f"From: {sender}\r\nSubject: r\r\n\r\nbody\r\n".encode())
    c = env.imap("s1", user=user, password=PW)
    ok(c.select("INBOX"))

    def search(*criteria):
        typ, data = c.search(None, *criteria)
        assert typ == "OK", (typ, data)
        return data[0].decode().split()

    assert search("FROM", "user@domain.org") == ["1"], search("FROM", "user@domain.org")
    assert search("FROM", "domain.org") == ["1", "3"], search("FROM", "domain.org")
    assert search("FROM", "smith") == ["2"] and search("FROM", "js@x.test") == ["2"]
    assert search("HEADER", "From", "user@domain.org") == []
    c.logout()


def test_search_returns(env):
    """#37 item 15: RETURN (MIN) / (MAX) with a MODSEQ key name the MODSEQ
    of the message returned (RFC 4731 3.2), COUNT and ALL the highest of
    all hits (RFC 7162 3.1.5)."""
    user = f"tess@{D}"
    for i in range(3):
        env.deliver("s1", "x@remote.test", [user], message(f"m {i}", "body\r\n"))
    c = env.imap("s1", user=user, password=PW)
    ok(c._simple_command("ENABLE", "CONDSTORE"))
    ok(c.select("INBOX"))
    ok(c.store("2", "+FLAGS", "(\\Flagged)"))     # 2 now has the highest MODSEQ
    typ, data = c.fetch("1:3", "(MODSEQ)")
    modseq = [int(re.search(rb"MODSEQ \((\d+)\)", d).group(1)) for d in data]
    assert modseq[1] > modseq[0] and modseq[1] > modseq[2], modseq

    def esearch(returns):
        typ, data = c._simple_command("SEARCH", "RETURN", returns, "MODSEQ", "1")
        assert typ == "OK", data
        return c._untagged_response(typ, data, "ESEARCH")[1][0].split(b")", 1)[1]

    for returns, want in (("(MIN)", b" MIN 1 MODSEQ %d" % modseq[0]),
                          ("(MAX)", b" MAX 3 MODSEQ %d" % modseq[2]),
                          ("(MIN MAX)", b" MIN 1 MAX 3 MODSEQ %d" % max(modseq[0], modseq[2])),
                          ("(COUNT)", b" COUNT 3 MODSEQ %d" % modseq[1]),
                          ("(MIN ALL)", b" MIN 1 ALL 1:3 MODSEQ %d" % modseq[1])):
        got = esearch(returns)
        assert got == want, (returns, got, modseq)
    c.logout()


def test_lsub_superiors(env):
    """RFC 3501 6.3.9 (#37 item 17): LSUB with "%" answers the unsubscribed
    superior of a subscribed mailbox, \\Noselect, once; "*" does not."""
    c = env.imap("s1", user=f"sven@{D}", password=PW)
    ok(c.create("Proj/a/b"))
    ok(c.create("Proj/a/c"))
    ok(c.create("Proj/d"))
    for name in ("Proj/a/b", "Proj/a/c", "Proj/d"):
        ok(c.subscribe(name))

    def lsub(pattern):
        return sorted(line.decode() for line in ok(c.lsub('""', pattern)) if line)

    assert lsub("Proj/%") == ['() "/" Proj/d', '(\\Noselect) "/" Proj/a'], lsub("Proj/%")
    assert '(\\Noselect) "/" Proj' in lsub("%"), lsub("%")
    assert lsub("Proj/*") == ['() "/" Proj/a/b', '() "/" Proj/a/c', '() "/" Proj/d'], \
        lsub("Proj/*")
    assert lsub("Proj/a/%") == ['() "/" Proj/a/b', '() "/" Proj/a/c'], lsub("Proj/a/%")
    # Subscribed itself: listed as it is, not as a superior too.
    ok(c.subscribe("Proj/a"))
    assert lsub("Proj/%") == ['() "/" Proj/a', '() "/" Proj/d'], lsub("Proj/%")
    c.logout()


def test(h):
    env = popstorelib.Env(h, tls=True, popstore_extra="auth_fail_delay = 0\n")
    env.add_user(f"lee@{D}", PW, shard="s1", quota="40K")
    for user, shard in (("alice", "s1"), ("bob", "s2"), ("carol", "s1"),
                        ("dave", "s1"), ("erin", "s1"), ("fred", "s1"), ("gina", "s1"), ("hank", "s1"), ("ivan", "s1"), ("judy", "s1"), ("kim", "s1"), ("max", "s1"), ("nora", "s1"), ("olga", "s1"), ("pat", "s1")):
        env.add_user(f"{user}@{D}", PW, shard=shard)
    for user in ("quinn", "rosa", "sven", "tess"):     # the #37 items 14-17 tests
        env.add_user(f"{user}@{D}", PW, shard="s1")
    env.start("s1")
    env.start("s2")
    test_login(env)
    test_folders(env)
    test_select(env)
    test_bad_input(env)
    test_curl(env)
    test_messages(env)
    test_append_selected(env)
    test_mime(env)
    test_fetchmail(env, h)
    test_getmail(env, h)
    test_concurrent(env)
    test_search(env)
    test_condstore(env)
    test_qresync(env)
    test_nul_octets(env)
    test_search_from(env)
    test_search_returns(env)
    test_lsub_superiors(env)
    test_quota(env)
    test_mbsync(env, h)
    test_offlineimap(env, h)
    test_durable(env, h)


if __name__ == "__main__":
    mtharness.main(test)
