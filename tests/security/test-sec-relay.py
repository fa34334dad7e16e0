#!/usr/bin/env python3
"""test-sec-relay.py -- no open relay from any mailtier-mta listener.

A client outside mynetworks (the MTA's mynetworks is 127.0.0.2/32; the
client connects from 127.0.0.1) tries every known relay spelling on port 25:
plain remote domains in upper case and with a trailing dot, the %-hack,
!-paths, quoted local parts holding @ % !, source routes, IPv4 and IPv6
address literals (ours and others). Each RCPT must be refused (5xx) or, if
accepted, delivered only to a local store: afterwards the remote sink
(transport_map for remote.test and everything else) has seen nothing and
the queue holds nothing. On 587 (after STARTTLS) and 465 MAIL without AUTH
gets 530, from outside and from inside mynetworks. A positive control (the
same relay from 127.0.0.2, inside mynetworks) must reach the sink, so the
test would notice a relay.
RFCs: 5321 3.6.1 (relaying), 3.6.2 / 4.1.1.3 (source routes), 4.1.3
(address literals); RFC 6409 4.3 / 5068 (submission needs AUTH)."""

import smtplib
import time

import sec_setup
import lmtpd
import mta_setup
import mtharness

ALICE = "alice@example.test"

HOSTILE = [
    "<victim@remote.test>",
    "<victim@REMOTE.TEST>",
    "<victim@remote.test.>",
    "<Victim@Remote.Test.>",
    "victim@remote.test",
    "<victim%remote.test@example.test>",
    "<victim%remote.test@EXAMPLE.TEST.>",
    "<victim%remote.test%example.test@example.test>",
    "<remote.test!victim@example.test>",
    "<remote.test!victim@EXAMPLE.TEST>",
    '<"victim@remote.test"@example.test>',
    '<"victim@remote.test"@EXAMPLE.TEST.>',
    '<"victim%remote.test"@example.test>',
    '<"remote.test!victim"@example.test>',
    '<"victim@remote.test">',
    "<@example.test:victim@remote.test>",
    "<@a.test,@b.test:victim@remote.test>",
    "<@example.test,@example.test:victim@remote.test>",
    "<@remote.test:alice@example.test>",
    "<victim@remote.test@example.test>",
    "<victim@[127.0.0.1]>",
    "<victim@[127.0.0.2]>",
    "<victim@[192.0.2.1]>",
    "<victim@[IPv6:::1]>",
    "<victim@[IPv6:2001:db8::1]>",
    "<victim@[ipv6:::ffff:192.0.2.1]>",
    "<alice@[127.0.0.1]>",
    "<alice@example.test.>",
    "<ALICE@EXAMPLE.TEST>",
    "<victim@example.test.remote.test>",
    "<victim@remote.test >",
]


def try_rcpt(env, rcpt, i, source="127.0.0.1", port=None):
    """One transaction; returns (code, text, subject or None)."""
    r = sec_setup.Raw(port or env.smtp_port, source=source)
    try:
        assert r.cmd("EHLO client.test")[0] == 250
        assert r.cmd("MAIL FROM:<x@remote.test>")[0] == 250
        code, text = r.cmd(f"RCPT TO:{rcpt}")
        subject = None
        if 200 <= code < 300:
            subject = f"relay probe {i}"
            assert r.cmd("DATA")[0] == 354
            r.send(f"Subject: {subject}\r\n\r\nprobe\r\n.\r\n")
            code2, text2 = r.reply()
            if code2 != 250:
                subject = None      # refused after all: fine
        r.cmd("QUIT")
        return code, text, subject
    finally:
        r.close()


def check_port25(env, sink):
    accepted = []
    for i, rcpt in enumerate(HOSTILE):
        code, text, subject = try_rcpt(env, rcpt, i)
        if 200 <= code < 300:
            accepted.append((rcpt, subject))
        else:
            assert 500 <= code < 600, (rcpt, text)
            assert code in (501, 550, 553, 554), (rcpt, text)
    # Only local spellings of local users may have been taken.
    # (A source route before a local address is dropped, RFC 5321 4.1.1.3:
    # "<@remote.test:alice@example.test>" is alice.)
    for rcpt, _ in accepted:
        final = rcpt.lower().strip("<>").rsplit(":", 1)[-1]
        assert final == "alice@example.test", \
            ("relay spelling accepted", rcpt, accepted)
    # Give delivery time to act, then: nothing at the sink, nothing queued,
    # every accepted one in the local store.
    local = [s for _, s in accepted if s]
    if local:
        sec_setup.wait_until(
            lambda: all(any(f"Subject: {s}".encode() in m.data
                            for m in env.shards["s1"].messages) for s in local),
            what=f"local delivery of {local}")
    time.sleep(1.0)
    assert sink.messages == [], ("relayed!", sink.messages)
    assert sink.connections == 0, "the MTA connected to the remote sink"
    listing = sec_setup.queue_list(env)
    assert "-- 0 messages" in listing, listing
    return accepted


def check_submission(env):
    ctx = env.client_tls_context()
    for source in ("127.0.0.1", "127.0.0.2"):
        s = smtplib.SMTP("127.0.0.1", env.submission_port, timeout=15,
                         source_address=(source, 0))
        s.ehlo("client.test")
        code, text = s.mail("x@remote.test")
        assert code == 530, (source, "587 before STARTTLS", code, text)
        s.starttls(context=ctx)
        s.ehlo("client.test")
        code, text = s.mail("x@remote.test")
        assert (code, text[:9]) == (530, b"5.7.0 Aut"), (source, code, text)
        code, text = s.rcpt("victim@remote.test")
        assert code == 503 or code >= 500, (code, text)
        s.quit()
        s = smtplib.SMTP_SSL("127.0.0.1", env.submissions_port, context=ctx,
                             timeout=15, source_address=(source, 0))
        s.ehlo("client.test")
        code, text = s.mail("x@remote.test")
        assert (code, text[:9]) == (530, b"5.7.0 Aut"), (source, code, text)
        code, text = s.rcpt("victim@remote.test")
        assert code >= 500, (code, text)
        s.quit()


def check_control(env, sink):
    """From 127.0.0.2 (mynetworks) the same relay is allowed: the sink and
    the checks above do see a relay when there is one."""
    code, text, subject = try_rcpt(env, "<victim@remote.test>", 999,
                                   source="127.0.0.2")
    assert code == 250 and subject, (code, text)
    got = sink.wait_messages(1)
    assert got[0].rcpt == "victim@remote.test", got


def test(h):
    sink = lmtpd.MailSink(lmtp=False, name="remote-sink").start()
    h.add_cleanup(sink.stop)
    env = mta_setup.MtaEnv(h, users={ALICE: "s1"}, mta_options={
        "transport_map": f"remote.test=127.0.0.1:{sink.port} "
                         f".test=127.0.0.1:{sink.port}",
        "relayhost": f"127.0.0.1:{sink.port}",
        "max_errors": "50"})
    env.start_mta()
    accepted = check_port25(env, sink)
    check_submission(env)
    check_control(env, sink)
    print("accepted as local:", accepted)
    env.mta.stop()


if __name__ == "__main__":
    mtharness.main(test)
