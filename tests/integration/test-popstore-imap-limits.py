#!/usr/bin/env python3
"""test-popstore-imap-limits.py -- the limits mailtier-popstore keeps on
what IMAP and POP3 clients control, against a live store and a real slapd,
with tight settings:

  - imap_max_user_sessions = 2: a third logged-in session of one user is
    refused NO [LIMIT] (another user is not), and once one logs out the
    user may log in again;
  - max_sessions_per_address = 4: the fifth POP3/IMAP connection from one
    client address gets "* BYE [UNAVAILABLE]" / "-ERR [SYS/TEMP]" at once,
    the MMP's address (proxy_addresses) is not counted, and a closed
    session gives its slot back;
  - max_mailbox_messages = 3: the fourth LMTP delivery to a mailbox is 552
    5.2.2 (mailbox full), APPEND, COPY and MOVE beyond it NO [LIMIT], and
    nothing of the refused ones is stored; after an EXPUNGE there is room;
  - a line over 64 KiB, a literal over max_message_size (APPEND: refused
    [TOOBIG] before a byte of it is sent) and nesting past the limit are
    answered BAD [TOOBIG], the session going on.
"""

import imaplib
import socket
import time

import mtharness
import popstorelib
from popstorelib import message

D = popstorelib.DOMAIN
PW = "limits-pass-1"


def ok(res):
    typ, data = res
    assert typ == "OK", (typ, data)
    return data


def test_user_sessions(env):
    a = [env.imap("s1", user=f"ann@{D}", password=PW) for _ in range(2)]
    third = env.imap("s1")
    try:
        third.login(f"ann@{D}", PW)
        raise AssertionError("a third session logged in")
    except imaplib.IMAP4.error as e:
        assert "[LIMIT]" in str(e), e
    other = env.imap("s1", user=f"ben@{D}", password=PW)    # another user: fine
    other.logout()
    a[0].logout()
    time.sleep(0.2)
    third.login(f"ann@{D}", PW)
    third.logout()
    a[1].logout()


def raw_greeting(env, proto, source):
    sock = env.raw("s1", proto=proto, source=source)
    sock.settimeout(10)
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return sock, data


def test_address_sessions(env):
    src = "127.0.0.3"
    held = []
    for proto in ("imap", "pop3", "imap", "pop3"):
        sock, greeting = raw_greeting(env, proto, src)
        assert greeting.startswith(b"* OK" if proto == "imap" else b"+OK"), greeting
        held.append(sock)
    for proto, refusal in (("imap", b"* BYE [UNAVAILABLE]"), ("pop3", b"-ERR [SYS/TEMP]")):
        sock, greeting = raw_greeting(env, proto, src)
        assert greeting.startswith(refusal), greeting
        assert sock.recv(100) == b""        # and closed
        sock.close()
    # Another address, and the MMP's (proxy_addresses), are not held back.
    for source in ("127.0.0.4", "127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1",
                   "127.0.0.1"):
        sock, greeting = raw_greeting(env, "imap", source)
        assert greeting.startswith(b"* OK"), (source, greeting)
        held.append(sock)
    held[0].close()
    time.sleep(0.3)
    sock, greeting = raw_greeting(env, "imap", src)
    assert greeting.startswith(b"* OK"), greeting
    sock.close()
    for s in held[1:]:
        s.close()


def test_mailbox_messages(env):
    user = f"cat@{D}"
    for i in range(3):
        rr, dr = env.deliver("s1", "x@remote.test", [user], message(f"m{i}", "body\r\n"))
        assert dr[0][0] == 250, dr
    rr, dr = env.deliver("s1", "x@remote.test", [user], message("m3", "body\r\n"))
    assert dr[0][0] == 552 and b"5.2.2" in dr[0][1], dr
    c = env.imap("s1", user=user, password=PW)
    typ, data = c.append("INBOX", None, None, message("a", "x\r\n"))
    assert typ == "NO" and b"[LIMIT]" in data[0], (typ, data)
    ok(c.create("Box"))
    ok(c.append("Box", None, None, message("b1", "x\r\n")))
    ok(c.append("Box", None, None, message("b2", "x\r\n")))
    assert ok(c.select("INBOX")) == [b"3"]
    typ, data = c.copy("1:2", "Box")            # 2 + 2 > 3
    assert typ == "NO" and b"[LIMIT]" in data[0], (typ, data)
    typ, data = c._simple_command("MOVE", "1:2", "Box")
    assert typ == "NO" and b"[LIMIT]" in data[0], (typ, data)
    ok(c.copy("1", "Box"))                      # 2 + 1 fits
    assert ok(c.status("Box", "(MESSAGES)"))[0].endswith(b"(MESSAGES 3)")
    assert ok(c.select("INBOX")) == [b"3"]      # nothing moved away
    ok(c.store("1", "+FLAGS", "(\\Deleted)"))
    ok(c.expunge())
    rr, dr = env.deliver("s1", "x@remote.test", [user], message("m4", "body\r\n"))
    assert dr[0][0] == 250, dr
    c.logout()


def test_input_limits(env):
    user = f"dan@{D}"
    sock = env.raw("s1", proto="imap")
    sock.settimeout(10)
    f = sock.makefile("rb")
    assert f.readline().startswith(b"* OK")

    def cmd(line):
        sock.sendall(line)
        out = []
        while True:
            l = f.readline()
            out.append(l)
            if not l or not l.startswith(b"*"):
                return out

    assert cmd(f"a LOGIN {user} {PW}\r\n".encode())[-1].startswith(b"a OK")
    # A line over 64 KiB: BAD, the session goes on.
    got = cmd(b"b NOOP " + b"x" * 70000 + b"\r\n")
    assert got[-1].startswith(b"b BAD [TOOBIG]"), got
    assert cmd(b"c NOOP\r\n")[-1].startswith(b"c OK")
    # A literal over max_message_size: refused before it is sent.
    got = cmd(b"d APPEND INBOX {99999999}\r\n")[-1]
    assert got.startswith(b"d BAD [TOOBIG]") or got.startswith(b"d NO [TOOBIG]"), got
    assert cmd(b"e NOOP\r\n")[-1].startswith(b"e OK")
    # Nesting past the limit.
    got = cmd(b"f SEARCH " + b"(" * 40 + b"ALL" + b")" * 40 + b"\r\n")[-1]
    assert got.startswith(b"f BAD [TOOBIG]"), got
    assert cmd(b"g NOOP\r\n")[-1].startswith(b"g OK")
    sock.close()


def test(h):
    env = popstorelib.Env(h, popstore_extra=(
        "imap_max_user_sessions = 2\nmax_sessions_per_address = 4\n"
        "max_mailbox_messages = 3\nallow_plaintext_auth = yes\n"), shards=("s1",))
    for u in ("ann", "ben", "cat", "dan"):
        env.add_user(f"{u}@{D}", PW)
    env.start("s1")
    test_user_sessions(env)
    test_address_sessions(env)
    test_mailbox_messages(env)
    test_input_limits(env)


if __name__ == "__main__":
    mtharness.main(test)
