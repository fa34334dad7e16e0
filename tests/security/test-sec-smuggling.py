#!/usr/bin/env python3
"""test-sec-smuggling.py -- SMTP smuggling (the published bare-LF / bare-CR
end-of-data variants, CVE-2023-51764 and relatives) never splits one
message into two: on mailtier-mta's port 25 with bare_newline_policy =
reject (the default) and with normalize, and on mailtier-popstore's LMTP
listener.

NUL in content (issue #19 item 3): "CRLF NUL . CRLF" is the end of data
for a next hop that drops NULs, so a message holding a NUL octet anywhere
is refused with 550 5.6.0 (RFC 5322 3.5) under either policy: on port 25
(DATA, and BDAT in one chunk or across chunks), on submission (587 after
STARTTLS + AUTH, 465), and on the store's LMTP; nothing with a NUL is
stored.

Each probe is one DATA whose content holds a fake end of data (LF.LF,
LF.CRLF, CR.CR, CRLF.CR, CR.CRLF, CRLF.LF, LF.CR, and NUL mixed in)
followed by "MAIL FROM:<evil@remote.test> RCPT TO:<bob@...> DATA ...". The
receiver must answer exactly one reply for it (a 5xx, or 250 for one
message), the next command (NOOP) must get its own 250, and at the end
bob's mailbox in the real store is empty, evil@remote.test never appears as
a sender, and alice holds exactly one message per accepted probe, each with
the "smuggled" text as content.
RFCs: 5321 4.1.1.4 (end of data is CRLF.CRLF), 2.3.8 (bare CR/LF), 2033
(LMTP DATA)."""

import base64
import os
import socket
import time

import sec_setup
import mta_setup
import mtharness

ALICE, BOB = "alice@example.test", "bob@example.test"

ENDS = [b"\n.\n", b"\n.\r\n", b"\r.\r", b"\r\n.\r", b"\r.\r\n", b"\r\n.\n",
        b"\n.\r", b"\r\n\x00.\r\n", b"\n\x00.\n", b"\r\n.\x00\r\n",
        b"\x00\n.\n", b"\r\r\n.\r\r\n", b"\r\n.\n\r\n"]


def payload(tag, i, end, lmtp=False):
    second = (b"MAIL FROM:<evil@remote.test>\r\nRCPT TO:<bob@example.test>\r\n"
              b"DATA\r\nSubject: smuggled %d\r\n\r\nsmuggled %s %d\r\n.\r\n"
              % (i, tag, i))
    return (b"Subject: smug %s %d\r\n\r\nfirst" % (tag, i)) + end + second


def probe(port, tag, greeting_cmd, end, i):
    """One smuggling attempt; returns the reply code to the DATA content."""
    r = sec_setup.Raw(port)
    try:
        assert r.cmd(f"{greeting_cmd} client.test")[0] == 250
        assert r.cmd("MAIL FROM:<a@remote.test>")[0] == 250
        assert r.cmd(f"RCPT TO:<{ALICE}>")[0] == 250
        assert r.cmd("DATA")[0] == 354
        r.send(payload(tag.encode(), i, end))
        code, text = r.reply()
        assert code == 250 or 500 <= code < 600, (tag, end, text)
        # The "smuggled" commands were content: NOOP gets its own reply.
        # (NOOP's "250 2.0.0", not a smuggled MAIL's "250 2.1.0".)
        code2, text2 = r.cmd("NOOP")
        assert code2 == 250 and " 2.0.0 " in text2, (tag, end, text2)
        r.cmd("QUIT")
        return code, text
    finally:
        r.close()


def mailbox(env, user):
    p = env.pop("s1", user)
    try:
        count, _ = p.stat()
        return [b"\r\n".join(p.retr(n)[1]) for n in range(1, count + 1)]
    finally:
        p.quit()


def run_mta(env, tag):
    accepted = []
    for i, end in enumerate(ENDS):
        code, text = probe(env.smtp_port, tag, "EHLO", end, i)
        if b"\x00" in end:
            assert text.startswith("550 5.6.0"), (tag, end, text)
        if code == 250:
            accepted.append(i)
        elif tag == "reject":
            assert text.startswith("550 5.6.0"), (end, text)
    return accepted


NUL_BODY = b"Subject: nul\r\n\r\nfirst\r\n\x00.\r\nsecond\r\n"


def nul_bdat(env):
    """BDAT: a NUL in a single LAST chunk, and in the first of two chunks
    (the refusal comes after the LAST one, RFC 3030 2)."""
    r = sec_setup.Raw(env.smtp_port)
    try:
        assert r.cmd("EHLO client.test")[0] == 250
        for chunks in ([NUL_BODY], [NUL_BODY[:24], NUL_BODY[24:]]):
            assert r.cmd("MAIL FROM:<a@remote.test>")[0] == 250
            assert r.cmd(f"RCPT TO:<{ALICE}>")[0] == 250
            for k, chunk in enumerate(chunks):
                last = k == len(chunks) - 1
                r.send(b"BDAT %d%s\r\n" % (len(chunk), b" LAST" if last else b"")
                       + chunk)
                code, text = r.reply()
                if not last:
                    assert code == 250, text
            assert text.startswith("550 5.6.0"), (chunks, text)
            assert r.cmd("NOOP")[0] == 250
        r.cmd("QUIT")
    finally:
        r.close()


def submission_session(env, implicit):
    """An authenticated session on 587 (STARTTLS) or 465 (implicit TLS)."""
    ctx = env.client_tls_context()
    if implicit:
        r = mta_setup.RawSmtp.__new__(mta_setup.RawSmtp)
        r.sock = ctx.wrap_socket(
            socket.create_connection(("127.0.0.1", env.submissions_port),
                                     timeout=15), server_hostname="localhost")
        r.buf = b""
        r.greeting = r.reply()
    else:
        r = sec_setup.Raw(env.submission_port)
        assert r.cmd("EHLO client.test")[0] == 250
        assert r.cmd("STARTTLS")[0] == 220
        r.sock = ctx.wrap_socket(r.sock, server_hostname="localhost")
    assert r.cmd("EHLO client.test")[0] == 250
    auth = base64.b64encode(f"\0{ALICE}\0{mta_setup.PASSWORD}".encode())
    assert r.cmd("AUTH PLAIN " + auth.decode())[0] == 235
    return r


def nul_submission(env):
    for implicit in (False, True):
        r = submission_session(env, implicit)
        try:
            assert r.cmd(f"MAIL FROM:<{ALICE}>")[0] == 250
            assert r.cmd(f"RCPT TO:<{ALICE}>")[0] == 250
            assert r.cmd("DATA")[0] == 354
            r.send(NUL_BODY + b".\r\n")
            code, text = r.reply()
            assert text.startswith("550 5.6.0"), (implicit, text)
            assert r.cmd("NOOP")[0] == 250
            r.cmd("QUIT")
        finally:
            r.close()


def wait_queue_empty(env):
    sec_setup.wait_until(lambda: sec_setup.queue_empty(env),
                         what="an empty queue")


def check_store(env, expected):
    """alice holds exactly the accepted probes, one message each; bob none."""
    assert mailbox(env, BOB) == [], "a smuggled message reached bob"
    msgs = mailbox(env, ALICE)
    subjects = sorted(m.split(b"Subject: smug ", 1)[1].split(b"\r\n", 1)[0]
                      for m in msgs)
    assert subjects == sorted(expected), (subjects, expected)
    for m in msgs:
        assert m.count(b"Subject: smug ") == 1, m
        assert b"\x00" not in m, m
        assert b"evil@remote.test" not in m.split(b"\r\n\r\n", 1)[0] or \
            b"Return-Path: <a@remote.test>" in m, m


def test(h):
    env = mta_setup.MtaEnv(h, users={ALICE: "s1", BOB: "s1"}, popstore=True,
                           mta_options={"max_errors": "100"})
    env.start_popstores()
    env.start_mta()
    expected = []

    # 1. MTA, bare_newline_policy = reject (the default).
    acc = run_mta(env, "reject")
    expected += [b"reject %d" % i for i in acc]
    print("mta reject: accepted", [ENDS[i] for i in acc])
    # Only probes without any bare CR or LF may be accepted.
    for i in acc:
        stripped = ENDS[i].replace(b"\r\n", b"")
        assert b"\r" not in stripped and b"\n" not in stripped, ENDS[i]

    # 2. MTA, bare_newline_policy = normalize.
    env.mta.stop()
    env.options["bare_newline_policy"] = "normalize"
    env.write_config()
    env.start_mta(name="mta-normalize")
    acc = run_mta(env, "normalize")
    expected += [b"normalize %d" % i for i in acc]
    print("mta normalize: accepted", [ENDS[i] for i in acc])

    # 3. popstore's LMTP listener (its own default policy).
    lmtp = env.store_ports["s1"]["lmtp"]
    for i, end in enumerate(ENDS):
        code, text = probe(lmtp, "lmtp", "LHLO", end, i)
        if b"\x00" in end:
            assert text.startswith("550 5.6.0"), ("lmtp", end, text)
        if code == 250:
            expected.append(b"lmtp %d" % i)
    print("lmtp: accepted", [e for e in expected if e.startswith(b"lmtp")])

    # 4. NUL over BDAT and on the submission listeners.
    nul_bdat(env)
    nul_submission(env)

    wait_queue_empty(env)
    time.sleep(0.5)
    check_store(env, expected)
    for d in (env.mta,):
        assert "evil@remote.test" not in d.log(), "smuggled MAIL FROM seen"
    for name, d in [(x.name, x) for x in h.daemons]:
        assert "from=<evil@remote.test>" not in d.log(), name
    env.mta.stop()


if __name__ == "__main__":
    mtharness.main(test)
