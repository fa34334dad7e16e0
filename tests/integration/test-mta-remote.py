#!/usr/bin/env python3
"""test-mta-remote.py -- mailtier-mta relaying remote mail over SMTP, to
loopback sinks the test runs (lmtpd.MailSink in SMTP mode) and a DNS stub
(mta_setup.DnsStub) it points c-ares at with [mta] dns_servers; nothing
leaves the machine.

Checks: a trusted client (mynetworks) may relay; transport_map sends a
domain to its host:port; the SMTP client uses EHLO, SIZE, PIPELINING and
opportunistic STARTTLS (the sink offers it with a self-signed certificate);
connections are reused; DNS MX in preference order with a dead first MX
falls to the second, on port 25 of a loopback address, and a domain with
no MX is its own exchanger (implicit MX); a domain that does
not exist bounces (5.1.2) and a 5xx at RCPT bounces, each with a DSN to
the (local) sender; SIGHUP reloads the config: a relayhost added then
takes the mail; a destination that stays down past max_queue_lifetime
bounces with 5.4.7 and the last error."""

import os
import random
import re
import socket
import time

import lmtpd
import mta_setup
import mtharness

ALICE = "alice@example.test"


def send(env, sender, rcpts, subject):
    with env.smtp() as s:
        s.ehlo("client.test")
        refused = s.sendmail(sender, rcpts, mta_setup.message(subject=subject,
                                                              sender=sender))
        assert refused == {}, refused


def port25_sink(cert, key):
    """An SMTP sink on port 25 of some 127.0.0.N (None if none is free)."""
    for _ in range(20):
        host = f"127.0.0.{random.randint(20, 250)}"
        try:
            return lmtpd.MailSink(lmtp=False, host=host, port=25, name="mx2",
                                  cert=cert, key=key).start()
        except OSError:
            continue
    return None


def test(h):
    env = mta_setup.MtaEnv(h, users={ALICE: "s1"}, mta_options={
        "mynetworks": "127.0.0.0/8", "remote_concurrency": "2"})
    relay_sink = lmtpd.MailSink(lmtp=False, name="relay.test", cert=env.cert,
                                key=env.key).start()
    mx2 = port25_sink(env.cert, env.key)
    dead_mx = mx2.host if mx2 else "127.0.0.1"
    while mx2 is not None and dead_mx == mx2.host:
        dead_mx = f"127.0.0.{random.randint(20, 250)}"
    dns = mta_setup.DnsStub({
        ("mx.test", "MX"): [(20, "second.mx.test"), (10, "first.mx.test")],
        ("first.mx.test", "A"): [dead_mx],
        ("second.mx.test", "A"): [mx2.host if mx2 else "127.0.0.1"],
        ("implicit.test", "A"): [mx2.host if mx2 else "127.0.0.1"],
    })
    h.add_cleanup(dns.close)
    dead_port = mtharness.free_port()
    env.options.update({"transport_map": f"relay.test=127.0.0.1:{relay_sink.port} "
                                         f"dead.test=127.0.0.1:{dead_port}",
                        "dns_servers": f"127.0.0.1:{dns.port}",
                        "retry_schedule": "1s", "max_queue_lifetime": "3s"})
    env.write_config()
    env.start_mta()

    # transport_map + opportunistic STARTTLS + pipelining + reuse.
    for i in range(3):
        send(env, "x@example.test", [f"r{i}@relay.test"], f"relay {i}")
    got = relay_sink.wait_messages(3)
    assert relay_sink.tls_sessions >= 1, "no STARTTLS to the relay"
    cmds = [c for _, c in relay_sink.commands]
    assert any(c.startswith("EHLO mx.example.test") for c in cmds), cmds
    assert any(c.startswith("MAIL FROM:<x@example.test> SIZE=") for c in cmds), cmds
    assert relay_sink.connections <= 2, relay_sink.connections
    assert all(b"Subject: relay" in m.data for m in got)
    env.mta.wait_log(r"to=<r0@relay.test> relay=127\.0\.0\.1:\d+ .*status=sent")

    # MX: preference order, a dead first MX, implicit port 25.
    if mx2 is not None:
        send(env, "x@example.test", ["someone@mx.test"], "via mx")
        m = mx2.wait_messages(1)[-1]
        assert m.rcpt == "someone@mx.test"
        assert ("mx.test", "MX") in dns.queries, dns.queries
        env.mta.wait_log(r"connect to first\.mx\.test\[%s:25\]" % re.escape(dead_mx))
        env.mta.wait_log(r"to=<someone@mx.test> relay=second\.mx\.test\[.*:25\] .*status=sent")
        # No MX at all: the domain is its own mail exchanger (RFC 5321 5.1).
        send(env, "x@example.test", ["who@implicit.test"], "implicit mx")
        assert mx2.wait_messages(2)[-1].rcpt == "who@implicit.test"
        assert ("implicit.test", "MX") in dns.queries, dns.queries
    else:
        print("note: no free port 25 on 127.0.0.0/8: MX delivery not checked")

    # A domain that does not exist: bounced with a DSN to the local sender.
    s1 = env.shards["s1"]
    send(env, ALICE, ["nobody@nxdomain.test"], "no such domain")
    dsn = mta_setup.wait_until("DSN for the unknown domain",
                     lambda: [m for m in s1.for_rcpt(ALICE) if m.mail_from == ""])
    assert b"Status: 5.1.2" in dsn[-1].data and b"nobody@nxdomain.test" in dsn[-1].data

    # 5xx at RCPT from the remote host: bounced.
    relay_sink.rcpt_reply = lambda rcpt: (550, "5.1.1 unknown here") if rcpt.startswith("bad") else None
    send(env, ALICE, ["bad@relay.test", "good@relay.test"], "partly bad")
    mta_setup.wait_until("good copy", lambda: [m for m in relay_sink.messages if m.rcpt == "good@relay.test"])
    dsn = mta_setup.wait_until("DSN for bad@relay.test",
                     lambda: [m for m in s1.for_rcpt(ALICE) if m.mail_from == ""
                              and b"bad@relay.test" in m.data])
    text = dsn[-1].data.decode()
    assert "Action: failed" in text and "Remote-MTA: dns; 127.0.0.1" in text, text
    assert "good@relay.test" not in text.split("message/delivery-status")[1].split("--")[0]

    # Down for longer than max_queue_lifetime: bounced with 5.4.7.
    send(env, ALICE, ["x@dead.test"], "never delivered")
    dsn = mta_setup.wait_until("expiry DSN", lambda: [m for m in s1.for_rcpt(ALICE)
                                            if m.mail_from == "" and b"x@dead.test" in m.data],
                     timeout=20)
    text = dsn[-1].data.decode()
    assert "Status: 5.4.7" in text and "delivery time expired" in text, text
    assert "Connection refused" in text, text

    # SIGHUP: a relayhost now takes all other remote mail.
    hop = lmtpd.MailSink(lmtp=False, name="relayhost").start()
    env.options["relayhost"] = f"127.0.0.1:{hop.port}"
    env.write_config()
    env.mta.reload()
    env.mta.wait_log(r"reload: done")
    send(env, "x@example.test", ["far@faraway.test"], "via relayhost")
    assert hop.wait_messages(1)[-1].rcpt == "far@faraway.test"
    assert ("faraway.test", "MX") not in dns.queries

    for sink in (relay_sink, hop) + ((mx2,) if mx2 else ()):
        assert not sink.errors, sink.errors
    env.mta.stop()
    for sink in (relay_sink, hop) + ((mx2,) if mx2 else ()):
        sink.stop()


if __name__ == "__main__":
    mtharness.main(test)
