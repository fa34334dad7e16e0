#!/usr/bin/env python3
"""test-mta-dsn-xtext.py -- the DSN parameters ENVID and ORCPT (RFC 3461)
as xtext on the wire and decoded in reports.

- Malformed xtext is refused with 501 5.5.4: '+' without two upper-case
  hex digits, a raw '+', an octet outside 33..126 (UTF-8 under SMTPUTF8),
  an ORCPT without "addr-type;"; valid ones are accepted.
- A message from a local sender to a remote recipient the next hop
  refuses (550 at RCPT) bounces; the DSN delivered to the sender's mailbox
  shows Original-Envelope-Id and Original-Recipient decoded (RFC 3464
  2.2.1, 2.3.2): ENVID=QQ+2B123+3Dx is "QQ+123=x", ORCPT=rfc822;
  bad+2Borig@remote.test is "rfc822;bad+orig@remote.test". A value whose
  decoded form holds CR LF stays xtext in the report (one line).
- The recipient the next hop accepts is relayed with ENVID and ORCPT
  re-encoded as valid xtext that decodes to what the client sent (the
  sink offers DSN).
Relaying from mynetworks (127.0.0.2) to a Python SMTP sink for remote.test."""

import re
import smtplib
import time

import lmtpd
import mta_setup
import mtharness

ALICE = "alice@example.test"
XTEXT_OK = re.compile(r"^(?:[!-*,-<>-~]|\+[0-9A-F]{2})+$")


def xtext_decode(s):
    return re.sub(r"\+([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), s)


def check_malformed(env):
    r = mta_setup.RawSmtp("127.0.0.1", env.smtp_port)
    assert r.cmd("EHLO client.test")[0] == 250
    for envid in ("a+2b", "a+2", "a+", "a+ZZ", "a+b"):
        code, text = r.cmd(f"MAIL FROM:<{ALICE}> ENVID={envid}")
        assert (code, text) == (501, "501 5.5.4 Malformed ENVID parameter"), (envid, text)
    code, text = r.cmd(f"MAIL FROM:<{ALICE}> SMTPUTF8 ENVID=caf\u00e9")
    assert (code, text) == (501, "501 5.5.4 Malformed ENVID parameter"), text
    code, text = r.cmd(f"MAIL FROM:<{ALICE}> ENVID={'x' * 101}")
    assert (code, text) == (501, "501 5.5.4 Malformed ENVID parameter"), text
    assert r.cmd(f"MAIL FROM:<{ALICE}> ENVID=QQ+2B123+3Dx")[0] == 250
    for orcpt in ("rfc822;a+2bb@example.test", "rfc822;a+b@example.test",
                  "rfc822;a+4", "alice@example.test"):
        code, text = r.cmd(f"RCPT TO:<{ALICE}> ORCPT={orcpt}")
        assert (code, text) == (501, "501 5.5.4 Malformed ORCPT parameter"), (orcpt, text)
    assert r.cmd(f"RCPT TO:<{ALICE}> ORCPT=rfc822;alice+2Bx@example.test")[0] == 250
    r.cmd("QUIT")
    r.close()


def test(h):
    remote = lmtpd.MailSink(lmtp=False, name="remote.test")
    remote.extensions = ["DSN"]
    remote.rcpt_reply = lambda rcpt: ((550, "5.1.1 no such user here")
                                      if rcpt.startswith("bad") else None)
    remote.start()
    h.add_cleanup(remote.stop)
    env = mta_setup.MtaEnv(h, users={ALICE: "s1"}, mta_options={
        "transport_map": f"remote.test=127.0.0.1:{remote.port}",
        "max_errors": "50"})
    env.start_mta()
    check_malformed(env)

    envid = "QQ+2B123+3Dx"
    bad_orcpt = "rfc822;bad+2Borig@remote.test"
    good_orcpt = "rfc822;good+2Bx+3Dy+41@remote.test"
    with smtplib.SMTP("127.0.0.1", env.smtp_port, timeout=15,
                      source_address=("127.0.0.2", 0)) as s:
        s.ehlo("client.test")
        s.mail(ALICE, [f"ENVID={envid}", "RET=HDRS"])
        code, text = s.rcpt("bad@remote.test", ["NOTIFY=FAILURE", f"ORCPT={bad_orcpt}"])
        assert code == 250, text
        code, text = s.rcpt("good@remote.test", [f"ORCPT={good_orcpt}"])
        assert code == 250, text
        code, text = s.data("Subject: xtext\r\n\r\nbody\r\n")
        assert code == 250, text
        # Decoded it would hold CR LF: the report keeps it xtext.
        s.mail(ALICE, ["ENVID=a+0D+0AX-Injected:+201"])
        code, text = s.rcpt("bad2@remote.test", ["ORCPT=rfc822;v+0D+0ABcc:+20x@remote.test"])
        assert code == 250, text
        code, text = s.data("Subject: xtext crlf\r\n\r\nbody\r\n")
        assert code == 250, text

    def reports():
        got = [m for m in env.shards["s1"].messages
               if m.mail_from == "" and m.rcpt == ALICE]
        return got if len(got) >= 2 else None
    dsns = mta_setup.wait_until("two DSNs", reports)
    by_subject = {}
    for m in dsns:
        by_subject[b"Subject: xtext crlf" in m.data] = m.data.decode("ascii", "replace")
    text = by_subject[False]
    print(text)
    assert "\r\nOriginal-Envelope-Id: QQ+123=x\r\n" in text, text
    assert "\r\nOriginal-Recipient: rfc822;bad+orig@remote.test\r\n" in text, text
    text = by_subject[True]
    assert "\r\nOriginal-Envelope-Id: a+0D+0AX-Injected:+201\r\n" in text, text
    assert "\r\nOriginal-Recipient: rfc822;v+0D+0ABcc:+20x@remote.test\r\n" in text, text
    assert "\nX-Injected" not in text and "\nBcc" not in text, text

    # What the next hop saw: re-encoded, valid, decoding to the same text.
    mta_setup.wait_until("the relayed message", lambda: [m for m in remote.messages
                                               if m.rcpt == "good@remote.test"])
    lines = [line for _, line in remote.commands]
    mail = [l for l in lines if l.startswith("MAIL FROM:<alice@") and "ENVID=QQ" in l]
    rcpt = [l for l in lines if l.startswith("RCPT TO:<good@remote.test>")]
    assert mail and rcpt, lines
    print(mail[0], "/", rcpt[0])
    sent_envid = re.search(r" ENVID=(\S+)", mail[0]).group(1)
    sent_orcpt = re.search(r" ORCPT=rfc822;(\S+)", rcpt[0]).group(1)
    assert XTEXT_OK.match(sent_envid) and XTEXT_OK.match(sent_orcpt), (mail, rcpt)
    assert xtext_decode(sent_envid) == "QQ+123=x", sent_envid
    assert xtext_decode(sent_orcpt) == "good+x=yA@remote.test", sent_orcpt
    assert sent_envid == "QQ+2B123+3Dx", sent_envid
    assert sent_orcpt == "good+2Bx+3DyA@remote.test", sent_orcpt
    env.mta.stop()


if __name__ == "__main__":
    mtharness.main(test)
