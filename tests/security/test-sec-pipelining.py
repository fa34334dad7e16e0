#!/usr/bin/env python3
"""test-sec-pipelining.py -- message content sent before DATA's 354
(issue #19 item 9). DATA ends a pipelining group (RFC 2920 3.1): a client
that pushes its message behind DATA without waiting for the 354 is not
speaking SMTP but firing blind (spamware, smuggling probes). With
[mta] forbid_unauth_pipelining = yes (the default, as Postfix 3.9's
smtpd_forbid_unauth_pipelining) an unauthenticated client gets
"554 5.5.0 Error: SMTP protocol synchronization" and is disconnected, and
nothing is queued or delivered; mynetworks does not exempt it. After AUTH
the same pipelining is accepted and delivered; a client that waits for the
354 is unaffected; BDAT chunks may be pipelined; and with the setting off
(SIGHUP) the old behaviour returns.
RFCs: 2920 3.1 (last command of a group), 5321 4.1.1.4 (DATA), 3030
(BDAT), 4954 (AUTH)."""

import base64
import time

import sec_setup
import mta_setup
import mtharness

ALICE = "alice@example.test"


def body(tag):
    return (f"From: <x@remote.test>\r\nTo: <{ALICE}>\r\nSubject: {tag}\r\n"
            f"\r\npipelined {tag}\r\n.\r\n").encode()


def delivered(env, tag):
    return [m for m in env.shards["s1"].messages
            if b"Subject: %s\r\n" % tag.encode() in m.data]


def envelope(r, sender="x@remote.test"):
    assert r.cmd("EHLO client.test")[0] == 250
    assert r.cmd(f"MAIL FROM:<{sender}>")[0] == 250
    assert r.cmd(f"RCPT TO:<{ALICE}>")[0] == 250


def refused(r, tag):
    """DATA + the message in one write: 554 5.5.0, then the close."""
    r.send(b"DATA\r\n" + body(tag))
    code, text = r.reply()
    assert text.startswith("554 5.5.0"), (tag, text)
    assert r.closed(), (tag, "still open after the 554")
    r.close()


def check_unauthenticated(env):
    # Port 25, a client outside mynetworks.
    r = sec_setup.Raw(env.smtp_port)
    envelope(r)
    refused(r, "unauth-25")
    # A whole pipelined group, content included, in one write: the RCPT
    # waits on the directory, DATA still finds the content behind it.
    r = sec_setup.Raw(env.smtp_port)
    assert r.cmd("EHLO client.test")[0] == 250
    r.send(f"MAIL FROM:<x@remote.test>\r\nRCPT TO:<{ALICE}>\r\n".encode() +
           b"DATA\r\n" + body("unauth-group"))
    assert r.reply()[0] == 250 and r.reply()[0] == 250
    code, text = r.reply()
    assert text.startswith("554 5.5.0"), text
    assert r.closed()
    r.close()
    # A mynetworks client (127.0.0.2) is not exempt: only AUTH is.
    r = sec_setup.Raw(env.smtp_port, source="127.0.0.2")
    envelope(r)
    refused(r, "unauth-mynetworks")
    env.mta.wait_log(r"improper command pipelining after DATA from 127\.0\.0\.1")


def check_waiting_client(env, tag="waits"):
    """A client that waits for the 354 is delivered as ever."""
    r = sec_setup.Raw(env.smtp_port)
    envelope(r)
    assert r.cmd("DATA")[0] == 354
    r.send(body(tag))
    assert r.reply()[0] == 250
    r.cmd("QUIT")
    r.close()
    env.shards["s1"].wait_messages(1)
    sec_setup.wait_until(lambda: delivered(env, tag), what=f"{tag} delivered")


def check_bdat(env):
    """BDAT chunks are meant to be pipelined: unaffected."""
    r = sec_setup.Raw(env.smtp_port)
    envelope(r)
    msg = body("bdat")[:-3]
    r.send(b"BDAT %d\r\n" % 10 + msg[:10] +
           b"BDAT %d LAST\r\n" % (len(msg) - 10) + msg[10:])
    assert r.reply()[0] == 250
    assert r.reply()[0] == 250
    r.close()
    sec_setup.wait_until(lambda: delivered(env, "bdat"), what="bdat delivered")


def check_authenticated(env):
    r = sec_setup.Raw(env.submission_port)
    assert r.cmd("EHLO client.test")[0] == 250
    assert r.cmd("STARTTLS")[0] == 220
    r.sock = env.client_tls_context().wrap_socket(r.sock,
                                                  server_hostname="localhost")
    auth = base64.b64encode(f"\0{ALICE}\0{mta_setup.PASSWORD}".encode())
    assert r.cmd("EHLO client.test")[0] == 250
    assert r.cmd("AUTH PLAIN " + auth.decode())[0] == 235
    envelope(r, sender=ALICE)
    r.send(b"DATA\r\n" + body("auth-587"))
    assert r.reply()[0] == 354
    code, text = r.reply()
    assert code == 250, text
    r.cmd("QUIT")
    r.close()
    sec_setup.wait_until(lambda: delivered(env, "auth-587"),
                         what="the authenticated message delivered")


def test(h):
    env = mta_setup.MtaEnv(h, users={ALICE: "s1"})
    env.start_mta()
    check_unauthenticated(env)
    check_waiting_client(env)
    check_bdat(env)
    check_authenticated(env)
    time.sleep(0.5)
    assert sec_setup.queue_empty(env), sec_setup.queue_list(env)
    for tag in ("unauth-25", "unauth-group", "unauth-mynetworks"):
        assert not delivered(env, tag), tag
    assert "unauth" not in sec_setup.queue_list(env)

    # The switch: off, unauthenticated pipelining is accepted again.
    env.options["forbid_unauth_pipelining"] = "no"
    env.write_config()
    env.mta.reload()
    r = sec_setup.Raw(env.smtp_port)
    envelope(r)
    r.send(b"DATA\r\n" + body("allowed"))
    assert r.reply()[0] == 354
    assert r.reply()[0] == 250
    r.close()
    sec_setup.wait_until(lambda: delivered(env, "allowed"), what="allowed")
    env.mta.stop()


if __name__ == "__main__":
    mtharness.main(test)
