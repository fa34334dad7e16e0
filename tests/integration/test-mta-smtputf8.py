#!/usr/bin/env python3
"""test-mta-smtputf8.py -- issue #19 item 1: an SMTPUTF8 message the MTA
acknowledged is delivered, and one it cannot deliver reaches a person.
Real slapd, real mailtier-mta, two real mailtier-popstore shards.

Checks:
- the audit's case: MAIL FROM:<user3> SMTPUTF8, an ASCII message to user1:
  250, then delivered (it was bounced with 5.6.7 because the store's LMTP
  lacked SMTPUTF8, and the DSN bounced the same way);
- a UTF-8 address provisioned with `mailtierctl users add 'jörg@...'` gets
  mail end to end (UTF-8 envelope over the store's LMTP, "with UTF8LMTP"),
  read back over POP3;
- a DSN about an SMTPUTF8 message to an ASCII sender is delivered;
- a DSN that cannot be delivered (its sender is no user) goes whole to the
  postmaster; nothing is left in the queue, and nothing is silently removed.

Trust boundary: test code only."""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mta_setup  # noqa: E402
import mtharness  # noqa: E402

D = mta_setup.DOMAIN
USER1, USER3 = f"user1@{D}", f"user3@{D}"
JOERG = f"j\u00f6rg@{D}"
POSTMASTER = f"postmaster@{D}"
GHOST = f"ghost@{D}"


def mailbox(env, shard, user):
    """Every message in user's mailbox (bytes), over POP3."""
    p = env.pop(shard, user)
    try:
        count, _ = p.stat()
        return [b"\r\n".join(p.retr(i)[1]) for i in range(1, count + 1)]
    finally:
        p.quit()


def send(env, sender, rcpt, body, smtputf8=True):
    """One transaction on port 25 from 127.0.0.2 (in mynetworks); the reply
    to the final dot."""
    s = mta_setup.RawSmtp("127.0.0.1", env.smtp_port)
    try:
        assert s.cmd("EHLO client.test")[0] == 250
        code, text = s.cmd(f"MAIL FROM:<{sender}>" + (" SMTPUTF8" if smtputf8 else ""))
        assert code == 250, text
        code, text = s.cmd(f"RCPT TO:<{rcpt}>")
        assert code == 250, text
        assert s.cmd("DATA")[0] == 354
        s.send(body.encode() + b".\r\n")
        code, text = s.reply()
        s.cmd("QUIT")
        return code, text
    finally:
        s.close()


def test(h):
    users = {USER1: "s1", USER3: "s2", JOERG: "s1", POSTMASTER: "s2"}
    env = mta_setup.MtaEnv(h, users=users, popstore=True,
                           popstore_options={"max_message_size": "4K"},
                           mta_options={"mynetworks": "127.0.0.0/8"})
    env.start_popstores()
    env.start_mta()

    # The audit's case.
    code, text = send(env, USER3, USER1, "Subject: plain\r\n\r\nascii body\r\n")
    assert code == 250, text
    got = mta_setup.wait_until("user1's message", lambda: [
        m for m in mailbox(env, "s1", USER1) if b"Subject: plain" in m])
    assert b"ascii body" in got[0]
    assert "status=bounced" not in env.mta.log(), "a bounce was logged"

    # A UTF-8 address, end to end.
    body = "Subject: =?utf-8?q?gr=C3=BC=C3=9Fe?=\r\nFrom: <" + USER3 + \
        ">\r\n\r\nHallo J\u00f6rg\r\n"
    code, text = send(env, USER3, JOERG, body)
    assert code == 250, text
    got = mta_setup.wait_until("jörg's message", lambda: mailbox(env, "s1", JOERG))
    assert "Hallo J\u00f6rg".encode() in got[0], got[0]
    assert b"with UTF8LMTP" in got[0], got[0]
    assert f"for <{JOERG}>".encode() in got[0], got[0]

    # A DSN about an SMTPUTF8 message reaches its (ASCII) sender: the store
    # refuses the message (over its 4K limit) with a 552.
    big = "Subject: too big\r\n\r\n" + ("x" * 70 + "\r\n") * 100
    code, text = send(env, USER3, USER1, big)
    assert code == 250, text
    dsn = mta_setup.wait_until("DSN to user3", lambda: [
        m for m in mailbox(env, "s2", USER3)
        if b"Undelivered Mail Returned to Sender" in m])
    assert b"Subject: too big" in dsn[0] and b"Status: 5.3.4" in dsn[0], dsn[0]

    # The same from a sender that is no user: the DSN bounces at the
    # directory, and the postmaster gets it whole.
    code, text = send(env, GHOST, USER1, big.replace("too big", "ghostly"))
    assert code == 250, text
    copy = mta_setup.wait_until("postmaster copy", lambda: [
        m for m in mailbox(env, "s2", POSTMASTER)
        if b"Postmaster Copy: Undelivered Mail" in m])
    text = copy[0].decode("utf-8", "replace")
    for needle in (f"Final-Recipient: rfc822; {GHOST}",
                   "Content-Type: message/rfc822",
                   "Undelivered Mail Returned to Sender",  # the DSN, whole
                   "Subject: ghostly"):
        assert needle in text, (needle, text)
    env.mta.wait_log(r"postmaster copy: queue=\S+ to=<postmaster@example.test>")

    # Nothing left behind, nothing held.
    def queue_empty():
        out = h.ctl("queue", "list", config=env.conf).stdout
        return not re.search(r"^[0-9A-F]{16} ", out, re.M)
    mta_setup.wait_until("empty queue", queue_empty)
    env.mta.stop()


if __name__ == "__main__":
    mtharness.main(test)
