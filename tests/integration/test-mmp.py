#!/usr/bin/env python3
"""test-mmp.py -- mailtier-mmp end to end: a real slapd, two store shards
(the real mailtier-popstore when built, else the popbackend.py stand-in),
a third shard that accepts but never greets (stand-in, for the timeout),
and real clients: Python poplib (STLS and POP3S), curl pop3:// (STLS)
and pop3s://, fetchmail (STLS), and raw sockets for pipelining and
injection.

Checked, each with its documented answer:
  * CAPA before and after STLS (no USER/SASL PLAIN before TLS), plaintext
    credentials refused without TLS, STLS discarding injected plaintext;
  * every user reaches their own shard's mailbox (alice s1, bob s2) with
    USER/PASS and AUTH PLAIN (initial response and continuation), pipelined
    commands, curl and fetchmail (which deletes: the QUIT reaches the store);
  * wrong password and unknown user: -ERR [AUTH] after a delay that grows
    per client address; at auth_fail_limit the address is refused;
  * disabled account: -ERR [SYS/PERM]; [IN-USE] from the store, unchanged;
  * directory down: -ERR [SYS/TEMP] at once, then logins work again;
  * shard down: -ERR [SYS/TEMP], marked down (the next login fails without
    trying), probed and up again; silent shard: -ERR [SYS/TEMP] within
    backend_connect_timeout;
  * conn_limit_per_client and conn_limit (plain and TLS): -ERR [SYS/TEMP];
  * bad commands, overlong lines, login and idle timeouts;
  * the session end log line (user, shard, result, bytes, duration);
  * SIGTERM: pre-login clients are told, exit 0.

Environment: MT_BUILDDIR, MT_SRCDIR (set by make check); MT_MMP_STANDIN=1
forces the stand-in shards. Exits 0 pass, 1 fail, 77 skip (no slapd).
"""

import base64
import os
import poplib
import shutil
import signal
import subprocess
import sys
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
    "dave@example.test": ("dave-pw", "s3"),
    "erin@example.test": ("erin-pw", "s2", "disabled"),
    "frank@example.test": ("frank-pw", "s1"),
    "gina@example.test": ("gina-pw", "s2"),
    # Long enough for the MMP's AUTH PLAIN to the store to go in two steps.
    "a-rather-long-local-part@example.test": ("long-pw", "s1"),
}
# A 2.6 MB message (the workload's largest), with dot-stuffed lines.
BIG = "Subject: big\n\n" + "".join(
    (".dot " if i % 1000 == 0 else "") + f"line {i:06d} " + "x" * 50 + "\n"
    for i in range(40000))
MAIL = {
    "alice@example.test": ["Subject: for alice on s1\n\nhello alice\n"
                           ".a line that starts with a dot\n"],
    "bob@example.test": ["Subject: for bob on s2\n\nhello bob\n",
                         "Subject: second for bob\n\nmore\n"],
    "frank@example.test": ["Subject: frank one\n\none\n",
                           "Subject: frank two\n\ntwo\n"],
    "gina@example.test": [BIG],
    "a-rather-long-local-part@example.test": ["Subject: long name\n\nhi\n"],
}
AUTH_FAIL_DELAY = 0.3
# Upper time bounds stretch when the MMP runs under valgrind.
# Upper bounds on answer times are multiplied by SLOW: 4 under valgrind, 1.5
# otherwise, since CI runs this next to other tests on two shared cores (a
# CI run failed here once with no reproduction at 1.0 on an idle machine).
SLOW = 4.0 if os.environ.get("MT_MMP_WRAPPER") else 1.5


def check(cond, what):
    if not cond:
        raise mtharness.HarnessError(what)
    if os.environ.get("MT_VERBOSE") == "1":
        print("ok   " + what, file=sys.stderr)


def error_of(fn, *args):
    """The -ERR line poplib raised for fn(*args) (bytes), or None."""
    try:
        fn(*args)
    except poplib.error_proto as e:
        return e.args[0]
    return None


def test_capabilities(c):
    p = c.pop3()
    check(p.getwelcome().startswith(b"+OK"), "greeting")
    capa = p.capa()
    for cap in ("TOP", "UIDL", "RESP-CODES", "AUTH-RESP-CODE", "PIPELINING",
                "STLS"):
        check(cap in capa, f"CAPA before TLS lists {cap}")
    check("USER" not in capa and "SASL" not in capa,
          "no USER or SASL PLAIN before TLS (RFC 2595 section 6)")
    err = error_of(p.user, "alice@example.test")
    check(err is not None and err.startswith(b"-ERR [AUTH] Plaintext"),
          f"USER refused before TLS: {err}")
    err = error_of(p._shortcmd, "AUTH PLAIN AGFsaWNlQGV4YW1wbGUudGVzdABhbGljZS1wdw==")
    check(err is not None and err.startswith(b"-ERR [AUTH] Plaintext"),
          f"AUTH PLAIN refused before TLS: {err}")
    p.stls(context=c.ctx)
    capa = p.capa()
    check("USER" in capa and capa.get("SASL") == ["PLAIN"] and "STLS" not in capa,
          f"CAPA after STLS: {capa}")
    p.quit()
    # Over implicit TLS: no STLS, USER at once.
    p = c.pop3s()
    capa = p.capa()
    check("USER" in capa and "STLS" not in capa, f"CAPA on pop3s: {capa}")
    p.quit()


def test_own_shards(c):
    p = c.login("alice@example.test")
    count, _ = p.stat()
    check(count == 1, f"alice has 1 message on s1 ({count})")
    lines = p.retr(1)[1]
    check(b"Subject: for alice on s1" in lines, "alice reads her s1 mail")
    check(b".a line that starts with a dot" in lines, "dot-stuffing relayed")
    p.quit()
    p = c.pop3s()
    p.user("bob@example.test")
    p.pass_("bob pw with spaces")           # RFC 1939 7: spaces in PASS
    count, _ = p.stat()
    check(count == 2, f"bob has 2 messages on s2 ({count})")
    check(b"Subject: for bob on s2" in p.retr(1)[1], "bob reads his s2 mail")
    check(len(p.uidl()[1]) == 2, "UIDL relayed")
    check(any(b"Subject: second for bob" in l for l in p.top(2, 0)[1]),
          "TOP relayed")
    p.quit()
    # The store login in two steps (AUTH PLAIN, "+ ", response).
    p = c.login("a-rather-long-local-part@example.test")
    check(b"Subject: long name" in p.retr(1)[1],
          "long address: AUTH PLAIN to the store after its continuation")
    p.quit()
    line = c.wait_session(user="bob@example.test")
    check(line["shard"] == "s2" and line["result"] == "ok"
          and int(line["in"]) > 0 and int(line["out"]) > 100
          and "duration_ms" in line and line["tls"] == "yes"
          and line["listener"] == "pop3s",
          f"session end line for bob: {line}")


def test_sasl_and_pipelining(c):
    s = c.ctx.wrap_socket(raw(c.mmps_port), server_hostname="localhost")
    check(read_line(s).startswith("+OK"), "pop3s greeting")
    # AUTH PLAIN without an initial response: "+ " then the response.
    s.sendall(b"AUTH PLAIN\r\n")
    check(read_line(s).startswith("+"), "AUTH PLAIN continuation")
    s.sendall(base64.b64encode(b"\0alice@example.test\0alice-pw") + b"\r\n")
    check(read_line(s).startswith("+OK"), "AUTH PLAIN (continuation) logs in")
    s.sendall(b"STAT\r\nNOOP\r\nQUIT\r\n")
    answers = [read_line(s) for _ in range(3)]
    check(answers[0].startswith("+OK 1 ") and answers[1].startswith("+OK")
          and answers[2].startswith("+OK"), f"pipelined after login: {answers}")
    s.close()
    # Everything in one write: USER, PASS and commands for the store.
    p = c.pop3_tls()
    p.sock.sendall(b"USER bob@example.test\r\nPASS bob pw with spaces\r\n"
                   b"STAT\r\nLIST\r\nQUIT\r\n")
    answers = [p._getline()[0] for _ in range(3)]
    check(all(a.startswith(b"+OK") for a in answers) and
          answers[2].startswith(b"+OK 2 "), f"pipelined login: {answers}")
    check(p._getline()[0].startswith(b"+OK"), "LIST answered")
    listing = []
    while True:
        line = p._getline()[0]
        if line == b".":
            break
        listing.append(line)
    check(len(listing) == 2 and p._getline()[0].startswith(b"+OK"),
          "LIST and QUIT after a pipelined login")
    p.close()
    # An authorization identity that is not the user is refused.
    p = c.pop3_tls()
    err = error_of(p._shortcmd, "AUTH PLAIN " + base64.b64encode(
        b"bob@example.test\0alice@example.test\0alice-pw").decode())
    check(err is not None and err.startswith(b"-ERR [AUTH]"),
          f"foreign authzid refused: {err}")
    err = error_of(p._shortcmd, "AUTH PLAIN not*base64")
    check(err is not None and err.startswith(b"-ERR"), "bad base64 refused")
    err = error_of(p._shortcmd, "AUTH CRAM-MD5")
    check(err == b"-ERR Unsupported authentication mechanism.", f"{err}")
    p.quit()


def test_stls_injection(c):
    s = raw(c.mmp_port)
    read_line(s)
    # A man in the middle appends a command to STLS (RFC 2595 section 4).
    s.sendall(b"STLS\r\nCAPA\r\n")
    check(read_line(s).startswith("+OK Begin TLS"), "STLS accepted")
    t = c.ctx.wrap_socket(s, server_hostname="localhost")
    t.sendall(b"QUIT\r\n")
    line = read_line(t)
    check(line.startswith("+OK Logging out"),
          f"the injected CAPA was discarded, not run over TLS: {line!r}")
    t.close()
    c.mmp.wait_log(r"discarded 6 plaintext bytes sent after STLS")


def test_curl(c):
    curl = shutil.which("curl")
    if curl is None:
        print("curl is not installed: its part is skipped", file=sys.stderr)
        return
    p = subprocess.run([curl, "-sS", "--ssl-reqd", "--cacert", c.cert,
                        "-u", "alice@example.test:alice-pw",
                        f"pop3://localhost:{c.mmp_port}/1"],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 0 and "hello alice" in p.stdout,
          f"curl pop3:// with STLS: {p.returncode} {p.stdout!r} {p.stderr}")
    p = subprocess.run([curl, "-sS", "--cacert", c.cert,
                        "-u", "bob@example.test:bob pw with spaces",
                        f"pop3s://localhost:{c.mmps_port}/"],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 0 and len(p.stdout.split()) == 4,
          f"curl pop3s:// LIST: {p.returncode} {p.stdout!r} {p.stderr}")
    # Without TLS curl cannot log in (no USER, no PLAIN offered).
    p = subprocess.run([curl, "-sS", "-u", "alice@example.test:alice-pw",
                        f"pop3://localhost:{c.mmp_port}/"],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode != 0, f"curl without TLS cannot log in ({p.returncode})")


def test_fetchmail(c, h):
    fetchmail = shutil.which("fetchmail", path="/usr/bin:/usr/local/bin:" +
                             os.environ.get("PATH", ""))
    if fetchmail is None:
        print("fetchmail is not installed: its part is skipped", file=sys.stderr)
        return
    home = os.path.join(h.tmpdir, "fetchmail-home")
    os.makedirs(home, exist_ok=True)
    out = os.path.join(home, "fetched.mbox")
    rc = os.path.join(home, "fetchmailrc")
    with open(rc, "w") as f:
        f.write(f"poll localhost with proto POP3 port {c.mmp_port}\n"
                f'  user "frank@example.test" there with password "frank-pw" is root here\n'
                f"  sslproto tls1.2+ sslcertck sslcertfile {c.cert}\n"
                f'  mda "cat >> {out}"\n')
    os.chmod(rc, 0o600)
    p = subprocess.run([fetchmail, "-f", rc, "--nodetach", "--nosyslog", "-v"],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, HOME=home))
    text = open(out).read() if os.path.exists(out) else ""
    check(p.returncode == 0 and "Subject: frank one" in text and
          "Subject: frank two" in text,
          f"fetchmail over STLS got both messages: {p.returncode}\n{p.stdout}{p.stderr}")
    check("STLS" in p.stdout + p.stderr, "fetchmail used STLS")
    # fetchmail deleted them: its QUIT went through the relay to the store.
    q = c.login("frank@example.test")
    check(q.stat()[0] == 0, "deletions committed by the relayed QUIT")
    q.quit()


def test_wrong_password(c):
    src = "127.0.0.11"
    p = c.pop3_tls(source=src)
    p.user("alice@example.test")
    err, t1 = timed(error_of, p.pass_, "wrong")
    check(err == b"-ERR [AUTH] Authentication failed." and t1 >= AUTH_FAIL_DELAY - 0.05,
          f"wrong password: {err} after {t1:.2f} s")
    err, t2 = timed(error_of, p.pass_, "wrong again")
    check(err is not None and err.startswith(b"-ERR [AUTH]") and
          t2 >= 2 * AUTH_FAIL_DELAY - 0.05, f"second failure waits longer ({t2:.2f} s)")
    p.user("nobody@example.test")
    err, t3 = timed(error_of, p.pass_, "whatever")
    check(err == b"-ERR [AUTH] Authentication failed." and
          t3 >= 4 * AUTH_FAIL_DELAY - 0.05,
          f"unknown user: same answer, longer delay ({t3:.2f} s)")
    # Another address is not penalised.
    q = c.pop3_tls(source="127.0.0.12")
    q.user("alice@example.test")
    err, t = timed(error_of, q.pass_, "wrong")
    check(t < 2 * AUTH_FAIL_DELAY * SLOW, f"other address: first delay only ({t:.2f} s)")
    q.quit()
    # The fourth failure reaches auth_fail_limit = 4: the answer, then EOF.
    err, t4 = timed(error_of, p.pass_, "wrong a third time")
    check(err is not None and err.startswith(b"-ERR [AUTH]"), f"4th: {err}")
    check(p.file.readline() == b"", "closed after the limit")
    p.close()
    s = raw(c.mmp_port, source=src)
    line = read_line(s)
    check(line.startswith("-ERR [SYS/TEMP] Too many failed logins"),
          f"blocked address refused at connect: {line!r}")
    s.close()
    c.wait_session(client=src, result="auth_failed")


def test_disabled(c):
    p = c.pop3_tls()
    p.user("erin@example.test")
    err, t = timed(error_of, p.pass_, "erin-pw")
    check(err == b"-ERR [SYS/PERM] Account disabled." and t < 2 * SLOW,
          f"disabled account: {err}")
    p.quit()


def test_in_use(c):
    a = c.login("alice@example.test")
    b = c.pop3_tls()
    b.user("alice@example.test")
    err = error_of(b.pass_, "alice-pw")
    check(err is not None and err.startswith(b"-ERR [IN-USE]"),
          f"second session gets the store's [IN-USE]: {err}")
    a.quit()
    ok = None
    for _ in range(50):           # the store releases the lock after QUIT
        ok = error_of(b.pass_, "alice-pw")
        if ok is None:
            break
        time.sleep(0.1)
    check(ok is None, f"login works once the first session is gone: {ok}")
    b.quit()


def test_directory_down(c, h):
    h.ctl("directory", "down", "--dir", c.dir)
    p = c.pop3_tls()
    p.user("carol@example.test")
    err, t = timed(error_of, p.pass_, "carol-pw")
    check(err is not None and err.startswith(b"-ERR [SYS/TEMP]") and t < 2.0 * SLOW,
          f"directory down: {err} after {t:.2f} s")
    h.ctl("directory", "up", "--dir", c.dir, "--port", c.ds["port"])
    err = "no try"
    for _ in range(50):
        err = error_of(p.pass_, "carol-pw")
        if err is None:
            break
        time.sleep(0.2)
    check(err is None, f"logins work again with the directory back: {err}")
    p.quit()


def test_shard_down(c):
    c.stop_shard("s2")
    p = c.pop3_tls()
    p.user("bob@example.test")
    err, t = timed(error_of, p.pass_, "bob pw with spaces")
    check(err is not None and err.startswith(b"-ERR [SYS/TEMP]") and t < 1.5 * SLOW,
          f"shard down: {err} after {t:.2f} s")
    c.mmp.wait_log(r"shard=s2 .*event=down")
    err, t = timed(error_of, p.pass_, "bob pw with spaces")
    check(err is not None and err.startswith(b"-ERR [SYS/TEMP]") and t < 1.0 * SLOW,
          f"marked down: fails at once ({t:.2f} s)")
    c.mmp.wait_log(r"result=tempfail_shard reason=shard marked down")
    c.start_shard("s2")
    c.mmp.wait_log(r"shard=s2 .*event=up", timeout=10)
    err = error_of(p.pass_, "bob pw with spaces")
    check(err is None, f"shard back up: login works ({err})")
    check(p.stat()[0] >= 1, "bob's mailbox is there")
    p.quit()
    # A shard that accepts but never greets: answered within the timeout.
    q = c.pop3_tls()
    q.user("dave@example.test")
    err, t = timed(error_of, q.pass_, "dave-pw")
    check(err is not None and err.startswith(b"-ERR [SYS/TEMP]") and 0.8 < t < 2.5 * SLOW,
          f"silent shard: {err} after {t:.2f} s (backend_connect_timeout 1 s)")
    q.quit()
    c.mmp.wait_log(r"shard=s3 .*event=down reason=timeout")


def test_per_client_limit(c):
    src = "127.0.0.21"
    held = []
    for _ in range(8):
        s = raw(c.mmp_port, source=src)
        check(read_line(s).startswith("+OK"), "admitted below the limit")
        held.append(s)
    s = raw(c.mmp_port, source=src)
    line = read_line(s)
    check(line == "-ERR [SYS/TEMP] Too many connections from your address, "
          "try again later.", f"9th connection from one address: {line!r}")
    check(s.recv(10) == b"", "closed after the answer")
    s.close()
    # Over TLS the answer comes after the handshake.
    t = c.ctx.wrap_socket(raw(c.mmps_port, source=src), server_hostname="localhost")
    line = read_line(t)
    check(line.startswith("-ERR [SYS/TEMP] Too many connections from your"),
          f"same over pop3s: {line!r}")
    t.close()
    s = raw(c.mmp_port, source="127.0.0.22")
    check(read_line(s).startswith("+OK"), "another address is admitted")
    s.close()
    for s in held:
        s.close()
    ok = False
    for _ in range(50):
        s = raw(c.mmp_port, source=src)
        ok = read_line(s).startswith("+OK")
        s.close()
        if ok:
            break
        time.sleep(0.05)
    check(ok, "admitted again once its connections closed")


def test_bad_input(c):
    # A command a byte at a time, and a user name with a space (escaped
    # in the log, so it cannot add fields of its own).
    p = c.pop3_tls()
    for b in b"CAPA\r\n":
        p.sock.sendall(bytes([b]))
        time.sleep(0.01)
    check(p._getline()[0].startswith(b"+OK"), "CAPA sent a byte at a time")
    while p._getline()[0] != b".":
        pass
    p.user("x result=ok")
    check(error_of(p.pass_, "y") is not None, "bad login")
    p.quit()
    c.wait_session(user="x\\x20result=ok", result="auth_failed")
    s = raw(c.mmp_port)
    read_line(s)
    s.sendall(b"X" * 300 + b"\r\n")
    check(read_line(s) == "-ERR Line too long.", "overlong line (RFC 2449: 255)")
    s.sendall(b"STAT\r\n")
    check(read_line(s) == "-ERR Unknown command.", "STAT before login")
    s.sendall(b"PASS x\r\n")
    check(read_line(s).startswith("-ERR [AUTH] Plaintext"), "PASS without TLS")
    for _ in range(6):
        s.sendall(b"NOPE\r\n")
        read_line(s)
    s.sendall(b"NOPE\r\n")
    line = read_line(s)
    check(line == "-ERR Too many errors, closing the connection.",
          f"max_errors = 10: {line!r}")
    check(s.recv(10) == b"", "closed")
    s.close()


def big_body_ok(lines):
    """The 2.6 MB message came through whole (after any trace headers)."""
    body = [l for l in lines if l.startswith(b"line ") or l.startswith(b".dot")]
    return (len(body) == 40000 and body[0].startswith(b".dot line 000000")
            and body[-1].startswith(b"line 039999"))


def test_big_message(c):
    # Through TLS: bufferevents, with a client that reads slowly so the
    # relay has to stop reading the store (MMP_RELAY_HIGH_WATER).
    p = c.pop3s()
    p.user("gina@example.test")
    p.pass_("gina-pw")
    p.sock.sendall(b"RETR 1\r\n")
    time.sleep(1)                       # let the buffers fill up
    check(p._getline()[0].startswith(b"+OK"), "RETR of 2.6 MB")
    lines = []
    while True:
        line = p._getline()[0]
        if line == b".":
            break
        lines.append(line[1:] if line.startswith(b"..") else line)
    check(big_body_ok(lines), "2.6 MB message intact through TLS")
    p.quit()


def test_splice(c):
    c.start_mmp(relay_splice="yes", allow_plaintext_auth="yes",
                global_overrides={"log_level": "debug"})
    p = c.pop3()
    p.user("gina@example.test")
    p.pass_("gina-pw")
    check(big_body_ok(p.retr(1)[1]), "2.6 MB message intact through splice")
    check(p.stat()[0] == 1, "STAT after RETR")
    p.quit()
    c.mmp.wait_log(r"relay: splice")
    c.wait_session(user="gina@example.test", listener="pop3", tls="no",
                   result="ok")


def test_timeouts(c):
    lt = 2 if SLOW < 2 else 8     # seconds: login_timeout, idle_timeout
    c.start_mmp(login_timeout=f"{lt}s", idle_timeout=f"{lt}s", conn_limit=3)
    s = raw(c.mmp_port)
    read_line(s)
    line, t = timed(read_line, s)
    check(line == "-ERR Disconnected for inactivity." and lt - 0.5 < t < lt + 2 * SLOW,
          f"login_timeout: {line!r} after {t:.2f} s")
    s.close()
    p = c.login("alice@example.test")
    t0 = time.monotonic()
    eof = p.file.readline()
    t = time.monotonic() - t0
    check(eof == b"" and lt - 0.5 < t < lt + 2 * SLOW, f"idle_timeout after login ({t:.2f} s)")
    p.close()
    c.mmp.wait_log(r"user=alice@example.test shard=s1 result=ok end=idle_timeout")
    # conn_limit = 3: the fourth connection is refused, plain and TLS.
    held = [raw(c.mmp_port) for _ in range(3)]
    for s in held:
        check(read_line(s).startswith("+OK"), "admitted")
    s = raw(c.mmp_port, source="127.0.0.31")
    line = read_line(s)
    check(line == "-ERR [SYS/TEMP] Too many connections, try again later.",
          f"conn_limit: {line!r}")
    s.close()
    t = c.ctx.wrap_socket(raw(c.mmps_port, source="127.0.0.32"),
                          server_hostname="localhost")
    line = read_line(t)
    check(line == "-ERR [SYS/TEMP] Too many connections, try again later.",
          f"conn_limit over TLS: {line!r}")
    t.close()
    for s in held:
        s.close()


def test_reload(c):
    c.mmp.reload()
    c.mmp.wait_log(r"reload: TLS certificate and key reloaded")
    p = c.pop3s()
    check(p.getwelcome().startswith(b"+OK"), "TLS works after SIGHUP")
    p.quit()


def test_drain(c):
    for _ in range(100):            # the held ones above may still be closing
        s = raw(c.mmp_port)
        if read_line(s).startswith("+OK"):
            break
        s.close()
        time.sleep(0.05)
    took = c.mmp.stop()
    check(read_line(s) == "-ERR [SYS/TEMP] Server shutting down.",
          "pre-login client told on SIGTERM")
    check(took < 5 * SLOW, f"drained in {took:.2f} s")
    s.close()


def test(h):
    c = mmp_setup.Cluster(h, USERS, MAIL, shards=("s1", "s2"),
                          silent_shards=("s3",))
    print(f"shards: {'mailtier-popstore' if c.popstore else 'popbackend.py stand-in'}",
          file=sys.stderr)
    c.start_mmp(conn_limit_per_client=8)
    test_capabilities(c)
    test_own_shards(c)
    test_sasl_and_pipelining(c)
    test_stls_injection(c)
    test_curl(c)
    test_fetchmail(c, h)
    test_wrong_password(c)
    test_disabled(c)
    test_in_use(c)
    test_directory_down(c, h)
    test_shard_down(c)
    test_per_client_limit(c)
    test_bad_input(c)
    test_big_message(c)
    test_splice(c)
    test_timeouts(c)
    test_reload(c)
    test_drain(c)


if __name__ == "__main__":
    mtharness.main(test)
