#!/usr/bin/env python3
"""test-mmp-imap.py -- mailtier-mmp as an IMAP proxy, end to end: a real
slapd, two real mailtier-popstore shards with their IMAP listeners, the
MMP's imap_listen (STARTTLS) and imaps_listen (implicit TLS) in front,
and real clients: Python imaplib, curl imap:// and imaps://, isync/mbsync
and fetchmail over IMAP, and raw sockets for what clients never send.

Checked, each with its documented answer:
  * the greeting's [CAPABILITY] (STARTTLS, LOGINDISABLED before TLS;
    AUTH=PLAIN after), LOGIN before TLS refused with [PRIVACYREQUIRED],
    ID answered by the proxy, commands of later states refused;
  * users on both shards reach their own mailboxes and folders, with LOGIN
    after STARTTLS and with AUTHENTICATE PLAIN (SASL-IR and on its own
    line) over implicit TLS; the login's OK carries the store's
    capabilities; pipelined commands after LOGIN reach the store;
  * the store is told the real client (ID x-originating-ip/port and the
    MMP's session id, in the store's log);
  * wrong password and unknown user: NO [AUTHENTICATIONFAILED] after the
    growing delay; a disabled account: NO [CONTACTADMIN];
  * IDLE through the relay wakes on a delivery (LMTP to the shard);
  * a shard taken away: its users are told (the store's BYE on SIGTERM,
    then NO [UNAVAILABLE] at login), the other shard's users are served,
    and the shard is back within the probe interval;
  * conn_limit_per_client: * BYE [UNAVAILABLE];
  * bad input before login (unknown commands, max_errors, an unfollowable
    literal) and the one session end log line (listener=imap...).

Environment: MT_BUILDDIR, MT_SRCDIR (set by make check). Exits 0 pass,
1 fail, 77 skip (no slapd, or no real store built).
"""

import base64
import imaplib
import os
import re
import shutil
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
sys.path.insert(0, HERE)
import mtharness  # noqa: E402
import mmp_setup  # noqa: E402
from mmp_setup import raw, read_line, timed  # noqa: E402

USERS = {
    "alice@example.test": ("alice-pw", "s1"),
    "bob@example.test": ("bob pw with spaces", "s2"),
    "carol@example.test": ("carol-pw", "s1"),
    "erin@example.test": ("erin-pw", "s2", "disabled"),
    "fred@example.test": ("fred-pw", "s2"),
    "gina@example.test": ("gina-pw", "s1"),
    "hank@example.test": ("hank-pw", "s2"),
}
MAIL = {
    "alice@example.test": ["Subject: for alice on s1\n\nhello alice\n"],
    "bob@example.test": ["Subject: for bob on s2\n\nhello bob\n",
                         "Subject: second for bob\n\nmore\n"],
    "carol@example.test": ["Subject: carol one\n\none\n",
                           "Subject: carol two\n\ntwo\n.dot line\n"],
    "fred@example.test": ["Subject: fred one\n\none\n"],
}
AUTH_FAIL_DELAY = 0.3


def check(cond, what):
    if not cond:
        raise mtharness.HarnessError(what)


def ok(result, what="command"):
    typ, data = result
    check(typ == "OK", f"{what}: {typ} {data}")
    return data


def subjects(m, mailbox="INBOX"):
    ok(m.select(mailbox, readonly=True), f"SELECT {mailbox}")
    typ, data = m.fetch("1:*", "(BODY.PEEK[HEADER.FIELDS (SUBJECT)])")
    if data == [None]:
        return []
    return [part[1].decode().strip() for part in data if isinstance(part, tuple)]


def imap_raw(port):
    """A raw connection and its greeting."""
    s = raw(port)
    return s, read_line(s)


def test_capabilities(c):
    s, greeting = imap_raw(c.mmp_imap_port)
    check(greeting.startswith("* OK [CAPABILITY IMAP4rev2 IMAP4rev1 ") and
          "STARTTLS" in greeting and "LOGINDISABLED" in greeting and
          "AUTH=PLAIN" not in greeting, f"greeting before TLS: {greeting}")
    s.sendall(b"a1 LOGIN alice@example.test alice-pw\r\n")
    check(read_line(s).startswith("a1 NO [PRIVACYREQUIRED]"),
          "LOGIN before TLS refused")
    s.sendall(b'a2 ID ("name" "test")\r\n')
    check(read_line(s) == '* ID ("name" "mailtier-mmp" "vendor" "mailtier")',
          "ID answered by the proxy")
    check(read_line(s) == "a2 OK ID completed.", "ID completed")
    s.sendall(b"a3 SELECT INBOX\r\n")
    check(read_line(s).startswith("a3 BAD "), "SELECT before login is BAD")
    s.sendall(b"a4 LOGOUT\r\n")
    check(read_line(s).startswith("* BYE"), "LOGOUT: BYE")
    check(read_line(s) == "a4 OK LOGOUT completed.", "LOGOUT: OK")
    check(s.recv(100) == b"", "closed after LOGOUT")
    s.close()

    m = c.imap()
    m.starttls(ssl_context=c.ctx)
    caps = m.capabilities
    check("AUTH=PLAIN" in caps and "LOGINDISABLED" not in caps and
          "STARTTLS" not in caps, f"capabilities after STARTTLS: {caps}")
    m.logout()
    m = c.imaps()
    check("AUTH=PLAIN" in m.capabilities, f"imaps capabilities: {m.capabilities}")
    m.logout()


def test_own_shards(c):
    m = c.imap_login("alice@example.test")
    # imaplib reads the login OK's [CAPABILITY]: the store's list.
    typ, data = m.capability()
    caps = data[0].decode()
    check("IDLE" in caps and "MOVE" in caps and "CONDSTORE" in caps,
          f"post-login capabilities are the store's: {caps}")
    check(subjects(m) == ["Subject: for alice on s1"], "alice's mail on s1")
    # #42: SORT and THREAD pass through unchanged, advertised as the store does.
    for cap in ("SORT", "SORT=DISPLAY", "ESORT", "THREAD=ORDEREDSUBJECT", "THREAD=REFERENCES"):
        check(cap in caps.split(), f"{cap} relayed through the MMP: {caps}")
    ok(m.select("INBOX"))
    typ, data = m.sort("(REVERSE DATE)", "UTF-8", "ALL")
    check(typ == "OK" and data == [b"1"], f"SORT through the MMP: {typ} {data}")
    typ, data = m.thread("REFERENCES", "UTF-8", "ALL")
    check(typ == "OK" and data == [b"(1)"], f"THREAD through the MMP: {typ} {data}")
    ok(m.create("Projects"), "CREATE")
    ok(m.select("INBOX"))
    ok(m.copy("1", "Projects"), "COPY")
    typ, data = m.list()
    check(any(b"Projects" in line for line in data), f"LIST shows the folder: {data}")
    m.logout()
    line = c.wait_session(user="alice@example.test", listener="imap")
    check(line["shard"] == "s1" and line["result"] == "ok" and line["tls"] == "yes",
          f"session end line: {line}")

    # bob on s2, over implicit TLS, AUTHENTICATE PLAIN with SASL-IR.
    m = c.imaps()
    password = USERS["bob@example.test"][0]
    ok(m.authenticate("PLAIN", lambda _: f"\0bob@example.test\0{password}".encode()),
       "AUTHENTICATE PLAIN")
    check(subjects(m) == ["Subject: for bob on s2", "Subject: second for bob"],
          "bob's mail on s2")
    m.logout()

    # AUTHENTICATE PLAIN with the response on its own line, and commands
    # pipelined after it: they go to the store once the login is done.
    s = mmp_setup.raw(c.mmp_imaps_port)
    s = c.ctx.wrap_socket(s, server_hostname="localhost")
    read_line(s)
    s.sendall(b"b1 AUTHENTICATE PLAIN\r\n")
    check(read_line(s) == "+ ", "continuation for the PLAIN response")
    token = base64.b64encode(b"\0fred@example.test\0fred-pw")
    s.sendall(token + b"\r\nb2 SELECT INBOX\r\nb3 LOGOUT\r\n")
    lines = []
    while True:
        line = read_line(s)
        if not line:
            break
        lines.append(line)
    check(lines[0].startswith("b1 OK [CAPABILITY IMAP4rev2"), f"login OK: {lines[:1]}")
    check("* 1 EXISTS" in lines and any(l.startswith("b2 OK") for l in lines) and
          any(l.startswith("b3 OK") for l in lines), f"pipelined commands: {lines}")
    s.close()


def test_originating_address(c):
    """The store logs the client's own address, port and the MMP's session."""
    m = c.imap("127.0.0.9")
    m.starttls(ssl_context=c.ctx)
    m.login("carol@example.test", "carol-pw")
    local_port = m.sock.getsockname()[1]
    m.logout()
    store = c.shard_daemons["s1"]
    store.wait_log(rf"imap id x-originating-ip=127\.0\.0\.9 "
                   rf"x-originating-port={local_port} x-session-ext-id=[0-9a-f]{{16}}")
    session = re.findall(r"x-session-ext-id=([0-9a-f]{16})", store.log())[-1]
    c.mmp.wait_log(rf"session={session} .*session end client=127\.0\.0\.9:{local_port} "
                   rf"listener=imap")


def test_wrong_password(c):
    for user, pw in (("alice@example.test", "wrong"), ("nobody@example.test", "x")):
        m = c.imap("127.0.0.5")
        m.starttls(ssl_context=c.ctx)
        r, took = timed(m.login, user, pw)
        check(isinstance(r, imaplib.IMAP4.error) and "AUTHENTICATIONFAILED" in str(r),
              f"{user}: {r!r}")
        check(took >= AUTH_FAIL_DELAY * 0.9, f"{user}: answered after {took:.2f}s")
        m.logout()
    m = c.imap("127.0.0.6")
    m.starttls(ssl_context=c.ctx)
    r, _ = timed(m.login, "erin@example.test", "erin-pw")
    check(isinstance(r, imaplib.IMAP4.error) and "CONTACTADMIN" in str(r),
          f"disabled account: {r!r}")
    m.logout()


def test_idle_wakes(c):
    m = c.imap_login("gina@example.test")
    ok(m.select("INBOX"))
    tag = m._new_tag().decode()
    m.send(f"{tag} IDLE\r\n".encode())
    check(m.readline().startswith(b"+"), "IDLE continuation")
    got = []

    def wait():
        got.append(m.readline())
    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.3)
    mmp_setup.lmtp_deliver(c.lmtp_port["s1"], ["gina@example.test"],
                           b"Subject: wake\n\nup\n")
    t.join(10)
    check(got and got[0].strip() == b"* 1 EXISTS", f"IDLE woke with {got}")
    m.send(b"DONE\r\n")
    check(m.readline().startswith(tag.encode() + b" OK"), "IDLE done")
    m.logout()


def test_curl(c):
    out = subprocess.run(
        ["curl", "-sS", "--ssl-reqd", "--cacert", c.cert, "--max-time", "30",
         "-u", "carol@example.test:carol-pw",
         f"imap://localhost:{c.mmp_imap_port}/INBOX;UID=2"],
        capture_output=True, timeout=60)
    check(out.returncode == 0, f"curl imap:// STARTTLS: {out.stderr}")
    check(b"Subject: carol two" in out.stdout and b".dot line" in out.stdout,
          f"curl imap:// got {out.stdout[:200]!r}")
    out = subprocess.run(
        ["curl", "-sS", "--cacert", c.cert, "--max-time", "30",
         "-u", "carol@example.test:carol-pw", f"imaps://localhost:{c.mmp_imaps_port}/"],
        capture_output=True, timeout=60)
    check(out.returncode == 0 and b"INBOX" in out.stdout,
          f"curl imaps:// LIST: {out.returncode} {out.stdout[:200]!r} {out.stderr}")


def test_mbsync(c, h):
    if shutil.which("mbsync") is None:
        raise mtharness.Skip("mbsync is not installed (Debian package isync)")
    m = c.imap_login("bob@example.test")
    ok(m.create("Projects"))
    ok(m.append("Projects", "(\\Flagged)", None, b"Subject: plan\r\n\r\nplan\r\n"))
    m.logout()
    local = os.path.join(h.tmpdir, "maildir")
    os.makedirs(local)
    rc = os.path.join(h.tmpdir, "mbsyncrc")
    with open(rc, "w") as f:
        f.write(f"IMAPAccount acct\nHost localhost\nPort {c.mmp_imap_port}\n"
                f"User bob@example.test\nPass \"{USERS['bob@example.test'][0]}\"\n"
                f"SSLType STARTTLS\nCertificateFile {c.cert}\nAuthMechs PLAIN\n\n"
                "IMAPStore remote\nAccount acct\n\n"
                f"MaildirStore local\nPath {local}/\nInbox {local}/INBOX\n"
                "SubFolders Verbatim\n\n"
                "Channel ch\nFar :remote:\nNear :local:\nPatterns INBOX Projects\n"
                "Create Both\nExpunge Both\nSyncState *\nSync All\n")
    for _ in range(2):
        r = subprocess.run(["mbsync", "-c", rc, "-a"], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, HOME=h.tmpdir))
        check(r.returncode == 0, f"mbsync: {r.stdout} {r.stderr}")
    got = []
    for sub in ("cur", "new"):
        d = os.path.join(local, "INBOX", sub)
        got += [open(os.path.join(d, n), "rb").read() for n in os.listdir(d)]
    check(len(got) == 2 and any(b"second for bob" in g for g in got),
          f"mbsync fetched bob's two messages: {len(got)}")
    projects = [n for sub in ("cur", "new")
                for n in os.listdir(os.path.join(local, "Projects", sub))]
    check(len(projects) == 1 and "F" in projects[0].split(",")[-1],
          f"mbsync fetched the folder with its flag: {projects}")


def test_fetchmail(c, h):
    mbox = os.path.join(h.tmpdir, "fetched.mbox")
    rc = os.path.join(h.tmpdir, "fetchmailrc")
    with open(rc, "w") as f:
        f.write(f"poll localhost protocol imap port {c.mmp_imap_port}\n"
                f'  user "fred@example.test" password "fred-pw" is "tester" here\n'
                f"  sslproto tls1.2+ sslcertck sslcertfile {c.cert} fetchall nokeep\n"
                f"  mda \"/bin/sh -c 'cat >> {mbox}'\"\n")
    os.chmod(rc, 0o600)
    r = subprocess.run(["fetchmail", "-f", rc, "--nosyslog", "--pidfile",
                        os.path.join(h.tmpdir, "fetchmail.pid"), "-v"],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, HOME=h.tmpdir))
    check(r.returncode == 0, f"fetchmail: {r.stdout} {r.stderr}")
    check(b"Subject: fred one" in open(mbox, "rb").read(), "fetchmail got fred's mail")
    m = c.imap_login("fred@example.test")
    typ, data = m.select("INBOX")
    check(data == [b"0"], f"fetchmail's deletions reached the store: {data}")
    m.logout()


def test_shard_down(c):
    bob = c.imap_login("bob@example.test")
    ok(bob.select("INBOX"))
    c.stop_shard("s2")
    # The store's drain says BYE with a response code; the relay passes it.
    line = bob.readline()
    check(line.startswith(b"* BYE [UNAVAILABLE]"), f"bob told: {line!r}")
    m = c.imap()
    m.starttls(ssl_context=c.ctx)
    r, took = timed(m.login, "bob@example.test", USERS["bob@example.test"][0])
    check(isinstance(r, imaplib.IMAP4.error) and "UNAVAILABLE" in str(r),
          f"login to a stopped shard: {r!r}")
    check(took < 2.0, f"answered within backend_connect_timeout ({took:.2f}s)")
    c.mmp.wait_log(r"shard=s2 protocol=imap .*event=down")
    r, took = timed(m.login, "bob@example.test", USERS["bob@example.test"][0])
    check(isinstance(r, imaplib.IMAP4.error) and "UNAVAILABLE" in str(r) and took < 0.5,
          f"marked down: at once ({took:.2f}s) {r!r}")
    m.logout()
    # The other shard's users are served meanwhile.
    a = c.imap_login("alice@example.test")
    check(subjects(a) == ["Subject: for alice on s1"], "alice served while s2 is down")
    a.logout()
    c.start_shard("s2")
    c.mmp.wait_log(r"shard=s2 protocol=imap .*event=up", timeout=10)
    m = c.imap_login("bob@example.test")
    check(len(subjects(m)) == 2, "bob back after the probe")
    m.logout()


def test_limits(c):
    socks = []
    for _ in range(4):
        s, greeting = imap_raw(c.mmp_imap_port)
        check(greeting.startswith("* OK"), greeting)
        socks.append(s)
    s, greeting = imap_raw(c.mmp_imap_port)
    check(greeting == "* BYE [UNAVAILABLE] Too many connections from your address, "
          "try again later.", f"over conn_limit_per_client: {greeting}")
    s.close()
    for s in socks:
        s.close()
    time.sleep(0.3)
    # Bad commands count; at max_errors the session ends with a BYE.
    s, _ = imap_raw(c.mmp_imap_port)
    for i in range(3):
        s.sendall(b"x%d FROB\r\n" % i)
        check(read_line(s).startswith("x%d BAD" % i), "unknown command BAD")
    s.sendall(b"x9 FROB\r\n")
    check(read_line(s) == "* BYE Too many errors, closing the connection.",
          "max_errors: BYE")
    check(s.recv(100) == b"", "closed")
    s.close()
    # An over-long literal cannot be followed: a BYE, and the session ends.
    s, _ = imap_raw(c.mmp_imap_port)
    s.sendall(b"y1 LOGIN {99999999}\r\n")
    line = read_line(s)
    check(line.startswith("y1 BAD [TOOBIG]") or line.startswith("* BYE"),
          f"too big literal: {line}")
    s.close()


def test(h):
    if mmp_setup.popstore_binary() is None:
        raise mtharness.Skip("mailtier-popstore is not built (the IMAP shards)")
    c = mmp_setup.Cluster(h, USERS, MAIL, shards=("s1", "s2"), backend="popstore")
    c.start_mmp(conn_limit_per_client=4, max_errors=4)
    test_capabilities(c)
    test_own_shards(c)
    test_originating_address(c)
    test_wrong_password(c)
    test_idle_wakes(c)
    test_curl(c)
    test_mbsync(c, h)
    test_fetchmail(c, h)
    test_shard_down(c)
    test_limits(c)


if __name__ == "__main__":
    mtharness.main(test)
