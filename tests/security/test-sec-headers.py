#!/usr/bin/env python3
"""test-sec-headers.py -- header injection through the envelope.

1. Protocol level: a MAIL FROM or RCPT TO path (or its parameters) holding
   a bare CR, a bare LF or a NUL -- "MAIL FROM:<a@b>\\rX-Injected: 1" -- is
   refused (500/501/553) on mailtier-mta's port 25 and on
   mailtier-popstore's LMTP listener, and the session goes on (the next
   NOOP gets its own 250: nothing was taken as a second line).
2. Bounces: messages with hostile but valid envelope data -- ENVID and
   ORCPT whose xtext decodes to CR LF "X-Injected:" and NUL (RFC 3461
   4), a quoted sender local part holding '"', ':' ';' and "Bcc:" -- are
   bounced by the next hop (550 5.1.1 from a stand-in for remote.test).
   Each DSN (RFC 3464) must be well formed: only CRLF line ends, no NUL,
   every header line "Name: value" or a folded continuation, no header or
   delivery-status field named X-Injected or Bcc at any level, and the
   ENVID/ORCPT values on one line. One DSN goes to a local sender (the
   store stand-in), one to the remote sender (the remote stand-in)."""

import email
import email.policy
import re
import time

import sec_setup
import lmtpd
import mta_setup
import mtharness

ALICE = "alice@example.test"

BAD_LINES = [
    b"MAIL FROM:<a@remote.test>\rX-Injected: 1\r\n",
    b"MAIL FROM:<a@remote.test>\nX-Injected: 1\r\n",
    b"MAIL FROM:<a@remote\x00.test>\r\n",
    b"MAIL FROM:<a@remote.test>\x00X-Injected: 1\r\n",
    b'MAIL FROM:<"a\rX-Injected: 1"@remote.test>\r\n',
    b"MAIL FROM:<a@remote.test> ENVID=x\rX-Injected:1\r\n",
]
BAD_RCPTS = [
    b"RCPT TO:<alice@example.test>\rX-Injected: 1\r\n",
    b"RCPT TO:<alice@example.test>\nX-Injected: 1\r\n",
    b"RCPT TO:<alice\x00@example.test>\r\n",
    b'RCPT TO:<"al\rice"@example.test>\r\n',
    b"RCPT TO:<alice@example.test> ORCPT=rfc822;a\rX-Injected:1\r\n",
]


def check_protocol(port, hello):
    for i, line in enumerate(BAD_LINES + BAD_RCPTS):
        r = sec_setup.Raw(port)
        try:
            assert r.cmd(f"{hello} client.test")[0] == 250
            if line.startswith(b"RCPT"):
                assert r.cmd("MAIL FROM:<a@remote.test>")[0] == 250
            r.send(line)
            code, text = r.reply()
            assert code in (500, 501, 553, 555), (port, line, text)
            # Then NOOP: its own "250 2.0.0" must come, and anything
            # answered before it (the part after a bare LF, which the line
            # reader ends a line at) must have been refused too.
            r.send("NOOP\r\n")
            while True:
                code, text = r.reply()
                if code == 250 and " 2.0.0 " in text:
                    break
                assert code >= 500, (port, line, "part accepted", text)
        finally:
            r.close()


def check_dsn(raw, what):
    assert b"\x00" not in raw, (what, "NUL in the DSN")
    lines = raw.split(b"\r\n")
    for line in lines:
        assert b"\r" not in line and b"\n" not in line, (what, "bare CR/LF", line)
    head = raw.split(b"\r\n\r\n", 1)[0]
    for line in head.split(b"\r\n"):
        assert re.match(rb"^([!-9;-~]+:|[ \t])", line), (what, "header", line)
    msg = email.message_from_bytes(raw, policy=email.policy.compat32)
    assert msg.get_content_type() == "multipart/report", msg.get_content_type()
    names = set()
    status = None
    for part in msg.walk():
        names |= {k.lower() for k in part.keys()}
        if part.get_content_type() == "message/delivery-status":
            status = part
    assert status is not None, (what, "no delivery-status part")
    text = raw.decode("utf-8", "replace")
    # Fields of the delivery-status part (per-message and per-recipient).
    ds = text.split("message/delivery-status", 1)[1]
    ds = ds.split("\r\n\r\n", 1)[1].split("\r\n--", 1)[0]
    fields = [l.split(":", 1)[0].lower() for l in ds.split("\r\n")
              if l and not l[0].isspace()]
    for bad in ("x-injected", "bcc"):
        assert bad not in names, (what, "injected header", bad, names)
        assert bad not in fields, (what, "injected DSN field", bad, fields)
    # The top-level header block: only what a DSN has.
    top = {l.split(b":", 1)[0].lower().decode() for l in head.split(b"\r\n")
           if l and l[:1] not in (b" ", b"\t")}
    assert not top & {"x-injected", "bcc", "cc"}, (what, top)
    return fields, ds


def test(h):
    remote = lmtpd.MailSink(lmtp=False, name="remote.test").start()
    h.add_cleanup(remote.stop)
    remote.rcpt_reply = lambda rcpt: ((550, "5.1.1 no such user here")
                                      if rcpt.startswith("victim") else None)
    env = mta_setup.MtaEnv(h, users={ALICE: "s1"}, mta_options={
        "transport_map": f"remote.test=127.0.0.1:{remote.port}",
        "max_errors": "100"})
    env.start_mta()
    check_protocol(env.smtp_port, "EHLO")

    # Hostile but valid envelopes, relayed from mynetworks (127.0.0.2).
    envid = "env+0D+0AX-Injected:+201+00tail"
    orcpt = "rfc822;victim+0D+0AX-Injected:+202+0D+0ABcc:+20x@remote.test"
    r = sec_setup.Raw(env.smtp_port, source="127.0.0.2")
    assert r.cmd("EHLO client.test")[0] == 250
    code, text = r.cmd(f"MAIL FROM:<{ALICE}> RET=HDRS ENVID={envid}")
    assert code == 250, text
    code, text = r.cmd(f"RCPT TO:<victim@remote.test> NOTIFY=FAILURE ORCPT={orcpt}")
    assert code == 250, text
    assert r.cmd("DATA")[0] == 354
    r.send("Subject: to bounce\r\nX-Test: 1\r\n\r\nbody\r\n.\r\n")
    assert r.reply()[0] == 250
    sender2 = '"evil\\"Bcc: x@y.test; X-Injected: 3"@remote.test'
    code, text = r.cmd(f"MAIL FROM:<{sender2}> ENVID={envid}")
    senders = [ALICE]
    if code == 250:
        senders.append(sender2)
        assert r.cmd(f"RCPT TO:<victim2@remote.test> ORCPT={orcpt}")[0] == 250
        assert r.cmd("DATA")[0] == 354
        r.send("Subject: to bounce 2\r\n\r\nbody\r\n.\r\n")
        assert r.reply()[0] == 250
    else:
        print("hostile sender refused at MAIL:", text)
    r.cmd("QUIT")
    r.close()

    got = env.shards["s1"].wait_messages(1)
    dsn = [m for m in got if m.mail_from == "" and m.rcpt == ALICE]
    assert dsn, got
    fields, ds = check_dsn(dsn[0].data, "local DSN")
    assert "original-envelope-id" in fields and "original-recipient" in fields, ds
    print("delivery-status of the local DSN:\n" + ds)
    if len(senders) > 1:
        got = sec_setup.wait_until(
            lambda: [m for m in remote.messages if m.mail_from == ""],
            what="the DSN to the remote sender")
        check_dsn(got[0].data, "remote DSN")
        to = re.search(rb"(?m)^To: (.*)$", got[0].data.split(b"\r\n\r\n")[0])
        print("remote DSN To:", to.group(1) if to else None)
    env.mta.stop()


def test_lmtp(h):
    """The same protocol checks on mailtier-popstore's LMTP listener."""
    env = mta_setup.MtaEnv(h, users={ALICE: "s1"}, shards=("s1",),
                           popstore=True)
    env.start_popstores()
    check_protocol(env.store_ports["s1"]["lmtp"], "LHLO")


if __name__ == "__main__":
    import sys
    # Two harnesses (each a slapd): the MTA with its bounces, the store.
    try:
        with mtharness.Harness() as h:
            test(h)
        with mtharness.Harness() as h:
            test_lmtp(h)
    except mtharness.Skip as e:
        print(f"SKIP: {e}", file=sys.stderr)
        sys.exit(77)
    except Exception:
        import traceback
        traceback.print_exc()
        print("FAIL", file=sys.stderr)
        sys.exit(1)
    print("PASS", file=sys.stderr)
