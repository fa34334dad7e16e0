#!/usr/bin/env python3
"""test-sec-sender-login.py -- after AUTH, the envelope sender must belong
to the login (issue #19 item 8), and Received: says who it was.

With [mta] sender_login_check = yes (the default), user8, logged in on
587 (STARTTLS + AUTH PLAIN), may use MAIL FROM:<user8@...> (any case),
one of its mailLocalAddress aliases, or <>; <ceo@bank.test> (nobody's) and
<user9@example.test> (another user's) get "553 5.7.1 <addr>: Sender
address rejected: not owned by user user8@example.test", and pipelined
RCPT/DATA behind such a MAIL are refused with 503 (the check waits for
the directory: no transaction starts meanwhile). The same holds after AUTH
on port 25 and on 465; without AUTH on 25 the sender is not checked.
Received: says "with ESMTPSA"; with received_auth_user = yes it also
carries "(Authenticated sender: user8@example.test)", which is absent by
default. sender_login_check = no lets an authenticated client use any
sender.
RFCs: 4954 (AUTH), 6409 6.1 (sender checked against the authenticated
identity), 3848 (ESMTPSA)."""

import base64
import socket

import sec_setup
import mta_setup
import mtharness

USER8, USER9 = "user8@example.test", "user9@example.test"
ALIAS8 = "u8alias@example.test"
REFUSAL = ("553 5.7.1 <%s>: Sender address rejected: not owned by user "
           + USER8)


def login(env, port):
    """user8's authenticated session on port (STARTTLS first unless 465)."""
    return sec_setup.raw_session(env, port, login=USER8)


def check_senders(env, port):
    r = login(env, port)
    for sender in ("ceo@bank.test", USER9, "user8@bank.test",
                   "user8+x@example.test"):
        code, text = r.cmd(f"MAIL FROM:<{sender}>")
        assert text == REFUSAL % sender, (port, sender, text)
        # No transaction was started.
        assert r.cmd(f"RCPT TO:<{USER9}>")[0] == 503, (port, sender)
    for sender in (USER8, "User8@Example.TEST", ALIAS8, ""):
        code, text = r.cmd(f"MAIL FROM:<{sender}>")
        assert code == 250, (port, sender, text)
        assert r.cmd("RSET")[0] == 250
    # Pipelined behind a refused MAIL: RCPT and DATA find no transaction.
    r.send(f"MAIL FROM:<ceo@bank.test>\r\nRCPT TO:<{USER9}>\r\nDATA\r\n")
    assert r.reply()[1] == REFUSAL % "ceo@bank.test"
    assert r.reply()[0] == 503
    assert r.reply()[0] == 503
    r.cmd("QUIT")
    r.close()


def send_as(env, port, sender, tag):
    r = login(env, port)
    assert r.cmd(f"MAIL FROM:<{sender}>")[0] == 250
    assert r.cmd(f"RCPT TO:<{USER9}>")[0] == 250
    assert r.cmd("DATA")[0] == 354
    r.send(f"From: <{sender}>\r\nSubject: {tag}\r\n\r\nhi\r\n.\r\n")
    code, text = r.reply()
    assert code == 250, text
    r.cmd("QUIT")
    r.close()
    return received(env, tag)


def received(env, tag):
    """Our Received: field of the delivered message tagged tag."""
    def find():
        for m in env.shards["s1"].messages:
            if b"Subject: %s\r\n" % tag.encode() in m.data:
                return m.data
        return None
    data = sec_setup.wait_until(find, what=f"{tag} delivered").decode()
    head = data.split("\r\n\r\n", 1)[0]
    assert head.startswith("Received: "), head
    return head.split("\r\nSubject:")[0].split("\r\nFrom:")[0]


def test(h):
    env = mta_setup.MtaEnv(h, users={USER9: "s1"})
    env.add_user(USER8, "s1", extra=("--alias", ALIAS8))
    env.start_mta()
    for port in (env.submission_port, env.submissions_port, env.smtp_port):
        check_senders(env, port)
    # Not authenticated on 25: the sender is not the MTA's business.
    r = sec_setup.Raw(env.smtp_port)
    assert r.cmd("EHLO client.test")[0] == 250
    assert r.cmd("MAIL FROM:<ceo@bank.test>")[0] == 250
    r.close()

    rec = send_as(env, env.submission_port, ALIAS8, "alias")
    assert "with ESMTPSA" in rec and "Authenticated sender" not in rec, rec
    env.mta.wait_log(r"mail from=<u8alias@example\.test> .* auth=user8@example\.test")

    # The switches: any sender, and the login in Received:.
    env.options["sender_login_check"] = "no"
    env.options["received_auth_user"] = "yes"
    env.write_config()
    env.mta.reload()
    rec = send_as(env, env.submission_port, "ceo@bank.test", "any-sender")
    assert f"\r\n\t(Authenticated sender: {USER8})\r\n\tby " in rec, rec
    assert "with ESMTPSA" in rec, rec
    env.mta.stop()


if __name__ == "__main__":
    mtharness.main(test)
