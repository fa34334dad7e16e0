#!/usr/bin/env python3
"""test-popstore-imap-audit.py -- what issue 37's audit found in the store's
IMAP server, each against a live mailtier-popstore and a real slapd, with
raw sockets and Python's imaplib:

  - item 1: a SEARCH that must read bodies runs asynchronously; its
    criteria must not point into parser buffers a reset frees. A SEARCH
    line over 16 KiB (1,700 UNDELETED keys) and one with a 40,000-octet
    literal find exactly what the short SEARCH finds, and the store lives
    on (under ASan the old code stops on a heap use-after-free);
  - item 2: before login a literal is at most 4 KiB: a synchronising one
    over it is not invited (BAD [TOOBIG]), a LITERAL+ one ends the session
    (BYE) before its octets are read, so 4 x 20 MiB sent grow the store's
    RSS by far less than 20 MiB; after login a literal that is not an
    APPEND is bounded too (BAD [TOOBIG] for SEARCH TEXT {40 MiB});
  - item 4: a client that does not log in is closed after login_timeout
    with "* BYE" (IMAP) / "-ERR" (POP3), however busy it keeps the line;
    the last tenth of max_sessions is kept for proxy_addresses;
  - item 5: a wrong proxy credential from a proxy address is answered
    after the failure delay, which grows, and its warning is written at
    most once a second per address;
  - item 6: x-* ID fields are logged only before login, and escaped;
  - item 7: NO answers do not count towards max_errors (BADs do);
  - item 13: '[' in an unquoted mailbox name and a LIST pattern;
  - a client that resets during a command that waits on the store leaves
    nothing behind (the daemon exits clean; LeakSanitizer in the ASan run).
"""

import base64
import re
import socket
import sys
import threading
import time

import mtharness
import popstorelib
from popstorelib import message

D = popstorelib.DOMAIN
PW = "audit-pass-1"


def note(text):
    print(text, file=sys.stderr)


def plain(authzid, authcid, password):
    return base64.b64encode(f"{authzid}\0{authcid}\0{password}".encode())


class Raw:
    """A raw IMAP client on a socket: lines in, tagged replies out."""

    def __init__(self, env, source=None, port=None):
        self.sock = (env.raw("s1", proto="imap", source=source) if port is None
                     else socket.create_connection(("127.0.0.1", port), 10))
        self.sock.settimeout(20)
        self.f = self.sock.makefile("rb")
        self.greeting = self.f.readline()

    def send(self, data):
        self.sock.sendall(data)

    def reply(self, tag):
        """Every line up to the one tagged tag (or EOF)."""
        out = []
        while True:
            line = self.f.readline()
            out.append(line)
            if not line or line.startswith(tag + b" "):
                return out

    def cmd(self, tag, text):
        self.send(tag + b" " + text + b"\r\n")
        return self.reply(tag)

    def eof(self, timeout=10.0):
        self.sock.settimeout(timeout)
        try:
            while True:
                line = self.f.readline()
                if not line:
                    return True
        except (socket.timeout, TimeoutError):
            return False
        except OSError:
            return True

    def close(self):
        self.f.close()
        self.sock.close()


def search_hits(lines):
    for line in lines:
        if line.startswith(b"* SEARCH"):
            return sorted(int(n) for n in line.split()[2:])
    raise AssertionError(lines)


def login(c, user):
    got = c.cmd(b"l", f"LOGIN {user} {PW}".encode())
    assert got[-1].startswith(b"l OK"), got


def test_async_search(env, store):
    """Item 1: criteria that outlive the parser's reset."""
    user = f"ann@{D}"
    filler = "lorem ipsum dolor sit amet\r\n" * 1600          # ~44 KB
    for i in range(12):
        body = (filler if i % 3 == 0 else "nothing here\r\n" * 1600)
        rr, dr = env.deliver("s1", "x@remote.test", [user],
                             message(f"big {i}", body))
        assert dr[0][0] == 250, dr
    c = Raw(env)
    login(c, user)
    assert c.cmd(b"s", b"SELECT INBOX")[-1].startswith(b"s OK")
    want = search_hits(c.cmd(b"a", b"SEARCH BODY lorem"))
    assert want == [1, 4, 7, 10], want
    # Over 16 KiB of line: the parser gives its buffers back at reset.
    padded = b"SEARCH" + b" UNDELETED" * 1700 + b" BODY lorem"
    assert len(padded) > 16384
    got = c.cmd(b"b", padded)
    assert got[-1].startswith(b"b OK"), got[-1]
    assert search_hits(got) == want, got[:2]
    # A 40,000-octet literal (a header value nothing has): NOT of it is
    # every message, so the hits are BODY's.
    c.send(b"c SEARCH BODY lorem NOT HEADER X-Filler {40000}\r\n")
    cont = c.f.readline()
    assert cont.startswith(b"+"), cont
    c.send(b"f" * 40000 + b"\r\n")
    got = c.reply(b"c")
    assert got[-1].startswith(b"c OK"), got[-1]
    assert search_hits(got) == want, got[:2]
    # Several in a row, pipelined: each its own answer.
    c.send(b"".join(b"p%d " % i + padded + b"\r\n" for i in range(4)))
    for i in range(4):
        got = c.reply(b"p%d" % i)
        assert got[-1].startswith(b"p%d OK" % i), got[-1]
        assert search_hits(got) == want, (i, got[:2])
    assert c.cmd(b"z", b"LOGOUT")[-1].startswith(b"z OK")
    c.close()
    assert store.running()


def test_prelogin_literals(env, store):
    """Item 2: no client that has not logged in makes the store hold
    more than a few KiB."""
    c = Raw(env, source="127.0.0.5")
    # A synchronising literal over the bound: not invited.
    got = c.cmd(b"a", b"LOGIN {20971520}")
    assert got[-1].startswith(b"a BAD [TOOBIG]"), got
    assert c.cmd(b"b", b"NOOP")[-1].startswith(b"b OK")
    # A password literal of 1 KiB is fine.
    c.send(b"c LOGIN {%d}\r\n" % len(f"ann@{D}"))
    assert c.f.readline().startswith(b"+")
    c.send(f"ann@{D}".encode() + b" {1024}\r\n")
    assert c.f.readline().startswith(b"+")
    c.send(b"x" * 1024 + b"\r\n")
    got = c.reply(b"c")
    assert got[-1].startswith(b"c NO [AUTHENTICATIONFAILED]"), got
    c.close()

    instrumented = popstorelib.instrumented(store.pid)
    before = popstorelib.rss_kb(store.pid)
    chunk = b"y" * (1 << 20)
    for _ in range(4):
        r = Raw(env, source="127.0.0.5")
        r.send(b"a LOGIN {20971520+}\r\n")
        line = r.f.readline()
        assert line.startswith(b"* BYE"), line
        # The 20 MiB it announced go nowhere: the session is over.
        r.sock.settimeout(2)
        try:
            for _ in range(20):
                r.sock.sendall(chunk)
        except OSError:
            pass
        assert r.eof()
        r.close()
    grown = popstorelib.rss_kb(store.pid) - before
    note(f"RSS growth after 4 x 20 MiB LOGIN literals: {grown} KB")
    if not instrumented:
        assert grown < 8 * 1024, grown

    # After login: a SEARCH literal is bounded, an APPEND's is not.
    c = Raw(env)
    login(c, f"ben@{D}")
    got = c.cmd(b"d", b"SEARCH TEXT {41943040}")
    assert got[-1].startswith(b"d BAD [TOOBIG]"), got
    msg = message("appended", "x" * 100000)
    c.send(b"e APPEND INBOX {%d}\r\n" % len(msg))
    assert c.f.readline().startswith(b"+")
    c.send(msg + b"\r\n")
    got = c.reply(b"e")
    assert got[-1].startswith(b"e OK"), got
    c.close()


def test_login_timeout(env):
    """Item 4: a client that never logs in goes after login_timeout
    (2 s here), even if it keeps the line busy."""
    sock = env.raw("s1", proto="imap", source="127.0.0.6")
    start = time.monotonic()
    data = b""
    sock.settimeout(0.5)
    while time.monotonic() - start < 8 and b"* BYE" not in data:
        # Busy for the first 1.4 s of the 2 (NOOPs do not extend it); then
        # quiet, so no command of ours crosses the close (a reset).
        if time.monotonic() - start < 1.4:
            sock.sendall(b"n NOOP\r\n")
        try:
            while True:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
        except (socket.timeout, TimeoutError):
            pass
    elapsed = time.monotonic() - start
    assert b"* BYE Login timed out\r\n" in data, data
    assert data.count(b"n OK") >= 2, data
    assert 1.5 < elapsed < 8, elapsed
    sock.settimeout(5)
    try:
        assert sock.recv(100) == b""
    except ConnectionResetError:
        pass
    sock.close()
    p = env.raw("s1", proto="pop3", source="127.0.0.6")
    lines = popstorelib.Lines(p)
    assert lines.line().startswith(b"+OK")
    start = time.monotonic()
    line = lines.line()
    assert line.startswith(b"-ERR") and b"timed out" in line, line
    assert lines.closed()
    assert 1.5 < time.monotonic() - start < 8
    p.close()
    # A logged-in session is not bound by it.
    c = Raw(env, source="127.0.0.6")
    login(c, f"ben@{D}")
    time.sleep(2.5)
    assert c.cmd(b"n", b"NOOP")[-1].startswith(b"n OK")
    c.close()


def test_proxy_slots(env):
    """Item 4: max_sessions = 20; direct clients get 18 of them, the
    proxy address the rest."""
    time.sleep(0.5)         # the sessions of the tests before have ended
    held = []
    refused = None
    for _ in range(20):
        c = Raw(env, source="127.0.0.7")
        if c.greeting.startswith(b"* BYE"):
            refused = c
            break
        held.append(c)
    assert refused is not None and len(held) == 18, len(held)
    assert b"[UNAVAILABLE]" in refused.greeting, refused.greeting
    refused.close()
    proxied = Raw(env, source="127.0.0.1")
    assert proxied.greeting.startswith(b"* OK"), proxied.greeting
    proxied.close()
    for c in held:
        c.close()


def test_proxy_credential(env, store):
    """Item 5: wrong proxy credentials are delayed (growing) and logged
    at most once a second per address."""
    log_before = len(store.log())
    times = []
    for i in range(3):
        c = Raw(env, source="127.0.0.1")
        start = time.monotonic()
        got = c.cmd(b"a", b"AUTHENTICATE PLAIN " +
                    plain(f"ann@{D}", popstorelib.PROXY_USER, f"wrong{i}"))
        times.append(time.monotonic() - start)
        assert got[-1].startswith(b"a NO [AUTHENTICATIONFAILED]"), got
        c.close()
    note(f"wrong proxy credential answered after {times}")
    assert times[0] >= 0.18, times          # auth_fail_delay = 200ms
    assert times[2] >= 0.7, times           # 200, 400, 800 ms
    # Eight more at once from the proxy address (not waiting for their
    # delayed answers): one warning line for the burst, two at most.
    burst = []
    for i in range(8):
        c = Raw(env, source="127.0.0.1")
        c.send(b"a AUTHENTICATE PLAIN " +
               plain(f"ann@{D}", popstorelib.PROXY_USER, f"burst{i}") + b"\r\n")
        burst.append(c)
    time.sleep(0.5)
    for c in burst:
        c.close()
    text = store.log()[log_before:]
    refused = re.findall(r"proxy login refused", text)
    note(f"{len(refused)} warning lines for 11 wrong proxy credentials")
    assert 2 <= len(refused) <= 5, refused
    assert "login failed" not in text, text
    # The right credential still logs in at once.
    c = Raw(env, source="127.0.0.1")
    start = time.monotonic()
    got = c.cmd(b"a", b"AUTHENTICATE PLAIN " +
                plain(f"ann@{D}", popstorelib.PROXY_USER, popstorelib.PROXY_PASSWORD))
    assert got[-1].startswith(b"a OK"), got
    assert time.monotonic() - start < 1.0
    c.close()


def test_id_fields(env, store):
    """Item 6: the proxy's ID before login is logged (escaped); after
    login an ID is the user's and is not."""
    c = Raw(env, source="127.0.0.1")
    got = c.cmd(b"i", b'ID ("x-originating-ip" "1.2.3.4 user=admin")')
    assert got[-1].startswith(b"i OK"), got
    store.wait_log(r"x-originating-ip=1\.2\.3\.4\\x20user\\x3dadmin")
    assert "x-originating-ip=1.2.3.4 user=admin" not in store.log()
    got = c.cmd(b"a", b"AUTHENTICATE PLAIN " +
                plain(f"ann@{D}", popstorelib.PROXY_USER, popstorelib.PROXY_PASSWORD))
    assert got[-1].startswith(b"a OK"), got
    got = c.cmd(b"j", b'ID ("x-originating-ip" "7.7.7.7")')
    assert got[-1].startswith(b"j OK"), got
    assert c.cmd(b"k", b"LOGOUT")[-1].startswith(b"k OK")
    c.close()
    time.sleep(0.3)
    assert "7.7.7.7" not in store.log()


def test_no_is_not_an_error(env):
    """Item 7: max_errors = 10 counts BADs, not NOs."""
    c = Raw(env)
    login(c, f"cat@{D}")
    assert c.cmd(b"c", b"CREATE Sent")[-1].startswith(b"c ")
    for i in range(12):
        got = c.cmd(b"c%d" % i, b"CREATE Sent")
        assert got[-1].startswith(b"c%d NO [ALREADYEXISTS]" % i), got
        got = c.cmd(b"s%d" % i, b"SELECT nosuch")
        assert got[-1].startswith(b"s%d NO [NONEXISTENT]" % i), got
    assert c.cmd(b"n", b"NOOP")[-1].startswith(b"n OK")
    for i in range(10):
        got = c.cmd(b"b%d" % i, b"FROBNICATE")
        assert got[-1].startswith(b"b%d BAD" % i), got
    bye = c.f.readline()
    assert bye.startswith(b"* BYE Too many errors"), bye
    assert c.eof()
    c.close()


def test_bracket_names(env):
    """Item 13: '[' is an ATOM-CHAR: unquoted mailbox names and LIST
    patterns may hold it (RFC 9051 9)."""
    c = Raw(env)
    login(c, f"ben@{D}")
    got = c.cmd(b"c", b"CREATE a[b")
    assert got[-1].startswith(b"c OK"), got
    got = c.cmd(b"s", b"SELECT a[b")
    assert got[-1].startswith(b"s OK"), got
    got = c.cmd(b"l", b'LIST "" a[b%')
    assert got[-1].startswith(b"l OK"), got
    assert any(l.startswith(b"* LIST ") and l.rstrip().endswith((b' a[b', b' "a[b"'))
               for l in got), got
    got = c.cmd(b"t", b"STATUS x]y[ (MESSAGES)")
    assert got[-1].startswith(b"t NO [NONEXISTENT]"), got
    # A FETCH section still keeps its spaces and lists.
    assert c.cmd(b"i", b"SELECT INBOX")[-1].startswith(b"i OK")
    got = c.cmd(b"f", b"FETCH 1:* (BODY.PEEK[HEADER.FIELDS (Subject)])")
    assert got[-1].startswith(b"f OK"), got
    c.close()


def test_qresync_fetch_uid(env):
    """Item 12: with QRESYNC enabled every untagged FETCH carries UID and
    MODSEQ (RFC 7162 3.1, 3.2.4): a plain FETCH, and one that sets \\Seen."""
    c = Raw(env)
    login(c, f"ben@{D}")
    assert c.cmd(b"e", b"ENABLE QRESYNC")[-1].startswith(b"e OK")
    assert c.cmd(b"s", b"SELECT INBOX")[-1].startswith(b"s OK")
    assert c.cmd(b"u", b"STORE 1 -FLAGS.SILENT (\\Seen)")[-1].startswith(b"u OK")
    got = c.cmd(b"f", b"FETCH 1 (FLAGS)")
    fetches = [l for l in got if l.startswith(b"* 1 FETCH")]
    assert fetches and all(b"UID " in l and b"MODSEQ (" in l for l in fetches), got
    got = c.cmd(b"b", b"FETCH 1 (BODY[HEADER.FIELDS (Subject)])")
    whole = b"".join(got[:-1])      # one response, its literal inside
    assert whole.startswith(b"* 1 FETCH") and b"UID " in whole and \
        b"MODSEQ (" in whole and b"FLAGS (\\Seen)" in whole, got
    c.close()


def test_close_and_pipelining(env):
    """CLOSE expunges what has \\Deleted now, another session's marks
    too (as EXPUNGE does, item 11); commands that finish at once are
    followed by what was pipelined behind them."""
    user = f"cat@{D}"
    for i in range(3):
        _, dr = env.deliver("s1", "x@remote.test", [user], message(f"close {i}", "x\r\n"))
        assert dr[0][0] == 250, dr
    a, b = Raw(env), Raw(env)
    login(a, user)
    login(b, user)
    got = a.cmd(b"s", b"SELECT INBOX")
    total = next(int(l.split()[1]) for l in got if l.endswith(b"EXISTS\r\n"))
    assert b.cmd(b"s", b"SELECT INBOX")[-1].startswith(b"s OK")
    assert b.cmd(b"d", b"STORE 1:2 +FLAGS.SILENT (\\Deleted)")[-1].startswith(b"d OK")
    a.send(b"c CLOSE\r\nn NOOP\r\n")
    assert a.reply(b"c")[-1].startswith(b"c OK"), "CLOSE"
    assert a.reply(b"n")[-1].startswith(b"n OK"), "the NOOP pipelined after CLOSE"
    got = a.cmd(b"t", b"STATUS INBOX (MESSAGES)")
    assert any(b"(MESSAGES %d)" % (total - 2) in l for l in got), (total, got)
    # Finished at once (nothing to expunge, nothing deleted), pipelined.
    assert a.cmd(b"s", b"SELECT INBOX")[-1].startswith(b"s OK")
    a.send(b"e EXPUNGE\r\nc CLOSE\r\nn NOOP\r\n")
    for tag in (b"e", b"c", b"n"):
        assert a.reply(tag)[-1].startswith(tag + b" OK"), tag
    a.close()
    b.close()


def test_reset_in_flight(env, store):
    """A client that resets its connection while its command waits on the
    store: the session goes, and the command's own state with it (the
    store never calls a cancelled request back). Under ASan the daemon's
    exit below reports any such state left (LeakSanitizer)."""
    import struct
    msg = message("reset", "x\r\n")
    commands = [b"COPY 1:* INBOX", b"STORE 1:* +FLAGS (\\Flagged)", b"EXPUNGE",
                b'LIST "" *', b"GETQUOTAROOT INBOX",
                b"APPEND INBOX {%d+}\r\n" % len(msg) + msg]
    for attempt in range(5):
        for command in commands:
            c = Raw(env)
            login(c, f"cat@{D}")
            assert c.cmd(b"s", b"SELECT INBOX")[-1].startswith(b"s OK")
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            c.send(b"x " + command + b"\r\n")
            time.sleep(0.001 * attempt)
            c.close()
    time.sleep(0.5)
    assert store.running()


def test(h):
    env = popstorelib.Env(h, shards=("s1",), popstore_extra=(
        "allow_plaintext_auth = yes\nlogin_timeout = 2s\nmax_sessions = 20\n"
        "auth_fail_delay = 200ms\nmax_errors = 10\n"))
    for u in ("ann", "ben", "cat"):
        env.add_user(f"{u}@{D}", PW)
    store = env.start("s1")
    test_async_search(env, store)
    test_prelogin_literals(env, store)
    test_login_timeout(env)
    test_proxy_slots(env)
    test_proxy_credential(env, store)
    test_id_fields(env, store)
    test_no_is_not_an_error(env)
    test_bracket_names(env)
    test_qresync_fetch_uid(env)
    test_close_and_pipelining(env)
    test_reset_in_flight(env, store)
    assert store.running()
    store.stop()


if __name__ == "__main__":
    mtharness.main(test)
