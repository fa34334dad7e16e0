#!/usr/bin/env python3
"""test-sec-postmaster.py -- issue #19 item 4: postmaster and the other
role addresses can be reached, from anyone (RFC 5321 4.5.1, RFC 2142).

A client outside mynetworks (127.0.0.1; mynetworks is 127.0.0.2/32) sends
on port 25 to <postmaster> (bare), <PostMaster@Example.Test>, the MTA's
host name (postmaster@mx.example.test, not a local domain, so it was
"Relay access denied"), MAILER-DAEMON@ (where our DSNs come from, so a
reply to a bounce reaches someone): each 250, each delivered to the [mta]
postmaster mailbox. abuse@ is an ordinary address until [mta] abuse names
a mailbox; then abuse@ each local domain and the host name go there. A
role spelling at a domain that is not ours stays a relay attempt (554).

Trust boundary: test code only."""

import time

import sec_setup
import mta_setup
import mtharness

DESK = "desk@example.test"
OUTSIDE = "127.0.0.1"


def rcpt_replies(env, rcpts):
    s = sec_setup.Raw(env.smtp_port, source=OUTSIDE)
    try:
        assert s.cmd("EHLO outsider.test")[0] == 250
        assert s.cmd("MAIL FROM:<someone@remote.test>")[0] == 250
        replies = {r: s.cmd(f"RCPT TO:{r}") for r in rcpts}
        if any(code == 250 for code, _ in replies.values()):
            assert s.cmd("DATA")[0] == 354
            s.send(b"Subject: role mail\r\nFrom: <someone@remote.test>\r\n\r\n"
                   b"hello\r\n.\r\n")
            code, text = s.reply()
            assert code == 250, text
        s.cmd("QUIT")
        return replies
    finally:
        s.close()


def delivered_to(env, address, count=1, timeout=15.0):
    """The role mail delivered to address, once count copies arrived (and a
    moment more, so a copy too many would show)."""
    def got():
        return [m for sink in env.shards.values() for m in sink.for_rcpt(address)
                if b"Subject: role mail" in m.data]
    end = time.time() + timeout
    while time.time() < end and len(got()) < count:
        time.sleep(0.1)
    time.sleep(0.5)
    return got()


def test(h):
    env = mta_setup.MtaEnv(h, users={"postmaster@example.test": "s1",
                                     DESK: "s2"})
    env.start_mta()

    roles = ["<postmaster>", "<PostMaster>", "<PostMaster@Example.Test>",
             "<postmaster@mx.example.test>", "<POSTMASTER@MX.EXAMPLE.TEST>",
             "<MAILER-DAEMON@mx.example.test>", "<mailer-daemon@example.test>"]
    replies = rcpt_replies(env, roles + ["<postmaster@remote.test>",
                                         "<abuse@example.test>"])
    for r in roles:
        assert replies[r][0] == 250, (r, replies[r])
    # Not ours: still a relay attempt.
    assert replies["<postmaster@remote.test>"][0] == 554, replies
    # abuse@ is not a role until configured: no such user here.
    assert replies["<abuse@example.test>"][0] == 550, replies
    got = delivered_to(env, "postmaster@example.test")
    # One copy for all the spellings (the same recipient once).
    assert len(got) == 1, got

    env.mta.stop()
    env.options["abuse"] = DESK
    env.write_config()
    env.start_mta(name="mta-abuse")
    replies = rcpt_replies(env, ["<abuse@example.test>",
                                 "<Abuse@MX.Example.Test>",
                                 "<abuse@remote.test>"])
    assert replies["<abuse@example.test>"][0] == 250, replies
    assert replies["<Abuse@MX.Example.Test>"][0] == 250, replies
    assert replies["<abuse@remote.test>"][0] == 554, replies
    assert len(delivered_to(env, DESK)) == 1

    # A configured postmaster mailbox elsewhere in the directory.
    env.mta.stop()
    env.options["postmaster"] = DESK
    env.write_config()
    env.start_mta(name="mta-postmaster")
    replies = rcpt_replies(env, ["<postmaster>"])
    assert replies["<postmaster>"][0] == 250, replies
    assert len(delivered_to(env, DESK, 2)) == 2
    env.mta.stop()


if __name__ == "__main__":
    mtharness.main(test)
