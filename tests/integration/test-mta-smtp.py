#!/usr/bin/env python3
"""test-mta-smtp.py -- mailtier-mta's SMTP server with real clients
(swaks, curl, Python smtplib and raw sockets) against a real slapd, with
LMTP stand-ins for the two store shards (lmtpd.py: mailtier-popstore's LMTP
listener is not part of this test yet).

Checks each documented reply: greeting and EHLO keywords; delivery to the
right shard, byte-exact after our Received: line; unknown user 550 5.1.1;
relay attempts (plain, %-hack, bang path, quoted local part with @, source
route, address literal) 554 5.7.1; SIZE and real oversize 552 5.3.4; too
many recipients 452 4.5.3; overlong command line 500 5.5.2; SMTP smuggling
probes (the smtpsmug patterns: LF.LF, CR.CR, LF.CRLF, CRLF.LF, CR.CRLF ...)
refused with 550 5.6.0 and never turned into a second message; pipelining;
STARTTLS with a pipelined plaintext command discarded; AUTH on 587 only
after STARTTLS, good and bad passwords, relay after AUTH; implicit TLS on
465; BDAT; VRFY 252; a repeated ESMTP parameter 555 5.5.4; too many
errors 421; the session summary log line."""

import base64
import smtplib
import socket
import ssl
import subprocess
import time

import mta_setup
import mtharness

ALICE, BOB = "alice@example.test", "bob@example.test"
MAX_SIZE = 65536
MAX_ERRORS = 12


def content_after_received(data):
    """The client's message: what follows our Received: field."""
    assert data.startswith(b"Received: from "), data[:200]
    lines = data.split(b"\r\n")
    i = 1
    while lines[i].startswith(b"\t"):
        i += 1
    return b"\r\n".join(lines[i:])


def check_replies(env):
    r = env.raw()
    assert r.greeting[0] == 220 and "mx.example.test ESMTP" in r.greeting[1], r.greeting
    code, text = r.cmd("EHLO client.test")
    assert code == 250, text
    for kw in ("PIPELINING", f"SIZE {MAX_SIZE}", "8BITMIME", "ENHANCEDSTATUSCODES",
               "STARTTLS", "CHUNKING", "DSN", "SMTPUTF8"):
        assert kw in text, (kw, text)
    assert "AUTH" not in text, "AUTH offered before TLS"
    assert r.cmd("VRFY alice")[0] == 252
    assert r.cmd("HELP")[0] == 214
    assert r.cmd("NOOP")[0] == 250
    assert r.cmd("RCPT TO:<alice@example.test>")[0] == 503
    assert r.cmd(f"MAIL FROM:<x@remote.test> SIZE={MAX_SIZE + 1}") == \
        (552, "552 5.3.4 Message size exceeds fixed maximum message size")
    assert r.cmd("MAIL FROM:<x@remote.test> SIZE=100")[0] == 250
    assert r.cmd("RCPT TO:<nobody@example.test>")[1].startswith("550 5.1.1"), "unknown user"
    # No open relay, in any spelling.
    for rcpt in ("<victim@other.test>", "<victim%other.test@example.test>",
                 "<other.test!victim@example.test>",
                 '<"victim@other.test"@example.test>',
                 "<@example.test:victim@other.test>",
                 "<victim@[192.0.2.1]>"):
        code, text = r.cmd(f"RCPT TO:{rcpt}")
        assert code in (550, 554) and ("5.7.1" in text or "5.1.1" in text), (rcpt, text)
        assert code != 250, rcpt
    code, text = r.cmd("RCPT TO:<victim@other.test>")
    assert text == "554 5.7.1 <victim@other.test>: Relay access denied", text
    assert r.cmd("RCPT TO:<Alice@Example.TEST>")[0] == 250
    assert r.cmd("RSET")[0] == 250
    # Too many recipients (max_recipients = 3).
    assert r.cmd("MAIL FROM:<x@remote.test>")[0] == 250
    for i in range(3):
        assert r.cmd(f"RCPT TO:<user{i}@example.test>")[0] == 250
    assert r.cmd("RCPT TO:<user9@example.test>") == (452, "452 4.5.3 Error: too many recipients")
    assert r.cmd("RSET")[0] == 250
    # Overlong command line.
    assert r.cmd("NOOP " + "x" * 3000)[1].startswith("500 5.5.2"), "overlong line"
    assert r.cmd("NOOP")[0] == 250, "session survives an overlong line"
    assert r.cmd("QUIT")[0] == 221
    r.close()


def check_delivery(env):
    s1, s2 = env.shards["s1"], env.shards["s2"]
    body = ("From: <sender@remote.test>\r\nTo: <alice@example.test>\r\n"
            "Subject: byte exact\r\n\r\n.leading dot\r\nline two\r\n"
            "..two dots\r\n")
    with env.smtp() as s:
        s.ehlo("client.test")
        refused = s.sendmail("sender@remote.test", [ALICE, BOB], body)
        assert refused == {}, refused
    got = s1.wait_messages(1)[-1]
    assert got.rcpt == ALICE and got.mail_from == "sender@remote.test"
    assert content_after_received(got.data) == body.encode(), got.data
    got = s2.wait_messages(1)[-1]
    assert got.rcpt == BOB
    assert b"(queue=" in got.data and b"for <" not in got.data.split(b";")[0]
    n1 = len(s1.messages)

    # swaks, with a body from a file and its own headers.
    p = subprocess.run(["swaks", "--server", f"127.0.0.1:{env.smtp_port}",
                        "--helo", "swaks.test", "--from", "sw@remote.test",
                        "--to", ALICE, "--header", "Subject: from swaks",
                        "--body", "swaks body\n"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "250 2.0.0 Ok: queued as" in p.stdout, p.stdout
    got = s1.wait_messages(n1 + 1)[-1]
    assert b"Subject: from swaks" in got.data and b"swaks body\r\n" in got.data

    # curl smtp://, the message from a file.
    path = env.dir + "/curl.eml"
    with open(path, "wb") as f:
        f.write(b"From: <c@remote.test>\r\nSubject: from curl\r\n\r\ncurl body\r\n")
    p = subprocess.run(["curl", "-sS", f"smtp://127.0.0.1:{env.smtp_port}/curl.test",
                        "--mail-from", "c@remote.test", "--mail-rcpt", ALICE,
                        "--upload-file", path], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
    got = s1.wait_messages(n1 + 2)[-1]
    assert content_after_received(got.data) == \
        b"From: <c@remote.test>\r\nSubject: from curl\r\n\r\ncurl body\r\n"

    # Oversize content without SIZE= is refused after it was read.
    r = env.raw()
    r.cmd("EHLO client.test")
    r.cmd("MAIL FROM:<x@remote.test>")
    r.cmd(f"RCPT TO:<{ALICE}>")
    assert r.cmd("DATA")[0] == 354
    r.send("Subject: big\r\n\r\n" + ("y" * 70 + "\r\n") * 1000 + ".\r\n")
    code, text = r.reply()
    assert (code, text[:9]) == (552, "552 5.3.4"), text
    assert r.cmd("NOOP")[0] == 250
    r.close()


def check_pipelining(env):
    r = env.raw()
    r.cmd("EHLO client.test")
    r.send("MAIL FROM:<p@remote.test>\r\nRCPT TO:<alice@example.test>\r\n"
           "RCPT TO:<nobody@example.test>\r\nRCPT TO:<bob@example.test>\r\nDATA\r\n")
    codes = [r.reply()[0] for _ in range(5)]
    assert codes == [250, 250, 550, 250, 354], codes
    r.send("Subject: pipelined\r\n\r\nbody\r\n.\r\nQUIT\r\n")
    assert r.reply()[0] == 250
    assert r.reply()[0] == 221
    r.close()


SMUGGLING = [b"\n.\n", b"\r.\r", b"\n.\r\n", b"\r\n.\n", b"\r.\r\n", b"\n.\r",
             b"\r\n.\r", b"\r\n\x00.\r\n"]


def check_smuggling(env):
    s1 = env.shards["s1"]
    for i, end in enumerate(SMUGGLING):
        before = len(s1.messages)
        r = env.raw()
        r.cmd("EHLO client.test")
        assert r.cmd("MAIL FROM:<a@remote.test>")[0] == 250
        assert r.cmd(f"RCPT TO:<{ALICE}>")[0] == 250
        assert r.cmd("DATA")[0] == 354
        smuggled = (b"Subject: smug %d\r\n\r\nfirst" % i + end +
                    b"MAIL FROM:<evil@remote.test>\r\nRCPT TO:<bob@example.test>\r\n"
                    b"DATA\r\nSubject: smuggled\r\n\r\nsmuggled\r\n.\r\n")
        r.send(smuggled)
        code, text = r.reply()
        # Bare newlines, and the NUL of CRLF NUL . CRLF (RFC 5322 3.5),
        # are refused with the message.
        assert (code, text[:9]) == (550, "550 5.6.0"), (end, text)
        # The "smuggled" commands were content: the next reply is ours.
        assert r.cmd("NOOP")[0] == 250, end
        r.cmd("QUIT")
        r.close()
        time.sleep(0.2)
        assert all(b"smuggled\r\n" not in m.data or m.data.count(b"Subject:") > 1
                   for m in s1.messages[before:]), end
        assert not any(m.mail_from == "evil@remote.test"
                       for m in s1.messages + env.shards["s2"].messages), end
    # A bare LF in the headers of an otherwise normal message.
    r = env.raw()
    r.cmd("EHLO client.test")
    r.cmd("MAIL FROM:<a@remote.test>")
    r.cmd(f"RCPT TO:<{ALICE}>")
    r.cmd("DATA")
    r.send(b"Subject: x\nX: y\r\n\r\nbody\r\n.\r\n")
    assert r.reply()[0] == 550
    # Bare LF in a command line.
    r.send(b"NOOP\n")
    assert r.reply()[1].startswith("500 5.5.2")
    r.close()


def check_smtputf8(env):
    s1 = env.shards["s1"]
    before = len(s1.messages)
    r = env.raw()
    r.cmd("EHLO client.test")
    code, text = r.cmd("MAIL FROM:<jürgen@remote.test>")
    assert (code, text[:9]) == (553, "553 5.6.7"), text
    assert r.cmd("MAIL FROM:<jürgen@remote.test> SMTPUTF8 BODY=8BITMIME")[0] == 250
    assert r.cmd(f"RCPT TO:<{ALICE}>")[0] == 250
    assert r.cmd("DATA")[0] == 354
    r.send("Subject: grüße\r\n\r\nüber\r\n.\r\n".encode())
    assert r.reply()[0] == 250
    r.close()
    got = s1.wait_messages(before + 1)[-1]
    assert got.mail_from == "jürgen@remote.test" and "SMTPUTF8" in got.params, got.params
    assert "with UTF8SMTP" in got.data.decode() and "grüße".encode() in got.data


def check_starttls_and_auth(env):
    ctx = env.client_tls_context()
    # Plaintext pipelined after STARTTLS must be thrown away (RFC 3207 4.2).
    r = env.raw(port=env.submission_port)
    r.cmd("EHLO client.test")
    assert r.cmd("MAIL FROM:<a@example.test>")[1].startswith("530 5.7.0 Must issue a STARTTLS")
    code, text = r.cmd("AUTH PLAIN " + base64.b64encode(b"\0alice@example.test\0x").decode())
    assert code == 530, text
    r.send("STARTTLS\r\nRSET\r\n")
    assert r.reply()[0] == 220
    tls = ctx.wrap_socket(r.sock, server_hostname="localhost")
    tls.sendall(b"EHLO client.test\r\n")
    first = tls.recv(4096).decode()
    assert first.startswith("250-mx.example.test"), ("injected RSET answered", first)
    assert "AUTH PLAIN LOGIN" in first and "STARTTLS" not in first, first
    tls.close()
    env.mta.wait_log(r"discarded 6 octets pipelined after STARTTLS")

    with env.smtp(port=env.submission_port) as s:
        s.ehlo("client.test")
        s.starttls(context=ctx)
        s.ehlo("client.test")
        try:
            s.login(ALICE, "wrong")
            raise AssertionError("bad password accepted")
        except smtplib.SMTPAuthenticationError as e:
            assert e.smtp_code == 535 and b"5.7.8" in e.smtp_error, e
        code, _ = s.login(ALICE, mta_setup.PASSWORD)
        assert code == 235
        # Authenticated: relaying is allowed.
        code, _ = s.mail(ALICE)
        assert code == 250
        code, text = s.rcpt("friend@elsewhere.test")
        assert code == 250, text
        s.rset()
    # Implicit TLS on 465 with AUTH LOGIN.
    before = len(env.shards["s2"].messages)
    with smtplib.SMTP_SSL("127.0.0.1", env.submissions_port, context=ctx,
                          timeout=15) as s:
        s.ehlo("client.test")
        s.user, s.password = ALICE, mta_setup.PASSWORD
        code, _ = s.auth("LOGIN", s.auth_login, initial_response_ok=False)
        assert code == 235
        s.sendmail(ALICE, [BOB], "Subject: via 465\r\n\r\nhello\r\n")
    got = env.shards["s2"].wait_messages(before + 1)
    assert any(b"with ESMTPSA" in m.data and b"Subject: via 465" in m.data for m in got)
    # 587 without AUTH may not send.
    with env.smtp(port=env.submission_port) as s:
        s.starttls(context=ctx)
        s.ehlo("client.test")
        code, text = s.mail(ALICE)
        assert code == 530 and b"Authentication required" in text, text


def check_bdat(env):
    before = len(env.shards["s1"].messages)
    r = env.raw()
    r.cmd("EHLO client.test")
    r.cmd("MAIL FROM:<b@remote.test>")
    r.cmd(f"RCPT TO:<{ALICE}>")
    part1 = b"Subject: bdat\r\n\r\nchunk one\r\n"
    part2 = b"chunk two\r\n.not stuffed\r\n"
    r.send(b"BDAT %d\r\n" % len(part1) + part1)
    assert r.reply() == (250, f"250 2.0.0 {len(part1)} octets received")
    r.send(b"BDAT %d LAST\r\n" % len(part2) + part2)
    code, text = r.reply()
    assert code == 250 and "queued as" in text, text
    r.cmd("QUIT")
    got = env.shards["s1"].wait_messages(before + 1)
    assert any(content_after_received(m.data) == part1 + part2 for m in got), got


def check_duplicate_params(env):
    """A keyword given twice is an invalid argument (RFC 3463 X.5.4), not a
    bad address: 555 5.5.4, for MAIL and RCPT, in any case mix."""
    r = env.raw()
    r.cmd("EHLO client.test")
    assert r.cmd("MAIL FROM:<x@remote.test> SIZE=1 SIZE=2") == \
        (555, "555 5.5.4 Duplicate parameter SIZE")
    assert r.cmd("MAIL FROM:<x@remote.test> BODY=7BIT body=8BITMIME") == \
        (555, "555 5.5.4 Duplicate parameter BODY")
    assert r.cmd("MAIL FROM:<x@remote.test>")[0] == 250
    assert r.cmd("RCPT TO:<alice@example.test> NOTIFY=NEVER NOTIFY=NEVER") == \
        (555, "555 5.5.4 Duplicate parameter NOTIFY")
    assert r.cmd("RCPT TO:<alice@example.test> NOTIFY=NEVER")[0] == 250
    r.close()


def check_error_limit(env):
    r = env.raw()
    for _ in range(MAX_ERRORS):
        assert r.cmd("BOGUS")[0] == 500
    # The error beyond the limit is answered, then the session ends.
    assert r.cmd("BOGUS")[0] == 500
    code, text = r.reply()
    assert code == 421 and "too many errors" in text, text
    assert r.closed()
    env.mta.wait_log(r"disconnect from 127\.0\.0\.1:\d+ .* unknown=0/%d commands=0/%d"
                     % (MAX_ERRORS + 1, MAX_ERRORS + 1))


def test(h):
    env = mta_setup.MtaEnv(h, users={ALICE: "s1", BOB: "s2"},
                           mta_options={"max_message_size": str(MAX_SIZE),
                                        "max_recipients": "3",
                                        "max_errors": str(MAX_ERRORS)})
    for i in range(3):
        env.add_user(f"user{i}@example.test", "s1")
    env.start_mta()
    check_replies(env)
    check_delivery(env)
    check_pipelining(env)
    check_smuggling(env)
    check_smtputf8(env)
    check_starttls_and_auth(env)
    check_bdat(env)
    check_duplicate_params(env)
    check_error_limit(env)
    env.mta.wait_log(r"disconnect from .* ehlo=1 mail=1 rcpt=2/3 data=1 quit=1")
    assert not env.shards["s1"].errors, env.shards["s1"].errors
    env.mta.stop()


if __name__ == "__main__":
    mtharness.main(test)
