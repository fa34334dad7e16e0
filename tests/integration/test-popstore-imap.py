#!/usr/bin/env python3
"""test-popstore-imap.py -- mailtier-popstore's IMAP server, first slice
(login, folders, SELECT; FETCH and the rest come next), with Python's
imaplib, curl imap:// and raw sockets against a real slapd, messages
delivered over LMTP:

  - the greeting's CAPABILITY; from a non-proxy address without TLS:
    LOGINDISABLED and STARTTLS, LOGIN refused with [PRIVACYREQUIRED],
    accepted after STARTTLS and on the implicit-TLS listener;
  - LOGIN and AUTHENTICATE PLAIN (continuation and SASL-IR), a wrong
    password [AUTHENTICATIONFAILED], a user of another shard [UNAVAILABLE],
    the MMP's proxy login with an authorization identity;
  - the first login's special-use folders, LIST with its attributes and
    LIST-EXTENDED options (SUBSCRIBED, SPECIAL-USE, RETURN STATUS), LSUB,
    CREATE with superiors, DELETE ([HASCHILDREN], [NONEXISTENT]), RENAME
    (inferiors, INBOX's messages), SUBSCRIBE, STATUS after deliveries,
    modified UTF-7 names and UTF-8 ones after ENABLE UTF8=ACCEPT;
  - SELECT / EXAMINE (EXISTS, FLAGS, UIDVALIDITY, UIDNEXT, READ-WRITE /
    READ-ONLY), CLOSE, UNSELECT; POP3's exclusive INBOX ([INUSE]);
  - synchronising literals and LITERAL+, bad commands answered BAD with
    the session going on, too many errors end it;
  - folders survive kill -9 and a restart (every change durable when
    answered).
"""

import base64
import imaplib
import socket
import subprocess

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

    # Implicit TLS.
    c = env.imap("s1", tls="implicit", user=f"alice@{D}", password=PW)
    c.logout()

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
    # POP3 wants the same INBOX: in use while it is selected.
    p = env.pop("s1")
    p.user(f"carol@{D}")
    try:
        p.pass_(PW)
        raise AssertionError("POP3 login while INBOX is selected")
    except Exception as e:
        assert "IN-USE" in str(e), e
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


def test_curl(env):
    # curl lists the mailboxes (LIST) after LOGIN.
    out = subprocess.run(
        ["curl", "-sS", "--max-time", "30", "-u", f"carol@{D}:{PW}",
         f"imap://127.0.0.1:{env.ports['s1']['imap']}/"],
        capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout.decode()
    assert '"/" INBOX' in text and "Sent" in text and "Old" in text, text


def test(h):
    env = popstorelib.Env(h, tls=True, popstore_extra="auth_fail_delay = 0\n")
    for user, shard in (("alice", "s1"), ("bob", "s2"), ("carol", "s1"),
                        ("dave", "s1")):
        env.add_user(f"{user}@{D}", PW, shard=shard)
    env.start("s1")
    env.start("s2")
    test_login(env)
    test_folders(env)
    test_select(env)
    test_bad_input(env)
    test_curl(env)
    test_durable(env, h)


if __name__ == "__main__":
    mtharness.main(test)
