#!/usr/bin/env python3
"""test-mta-delivery.py -- mailtier-mta's queue and local delivery over
LMTP, against a real slapd and two LMTP stand-ins for the store shards
(lmtpd.py; mailtier-popstore's LMTP listener is not part of this test).

Checks: recipients grouped per shard (one LMTP transaction per shard,
pipelined), cached connections reused across messages; each recipient's
own LMTP reply after DATA decides its fate (a 452 for one is retried by the
schedule, the other is not delivered twice); a shard that is down defers
the message, `mailtierctl queue list/show` show it with its last error, and
it is delivered after the shard is back, by `queue flush` and by the retry
schedule; `queue hold/release/delete`; a 550 at LMTP time bounces: an RFC
3464 DSN arrives in the (local) sender's mailbox, and for a null sender
none is made but the postmaster gets a copy; a mail loop (too many Received: lines) bounces with 5.4.6."""

import re
import time

import mta_setup
import mtharness

ALICE, BOB, CAROL = "alice@example.test", "bob@example.test", "carol@example.test"
GONE = "gone@example.test"
POSTMASTER = "postmaster@example.test"


def send(env, sender, rcpts, subject, extra_headers=""):
    with env.smtp() as s:
        s.ehlo("client.test")
        refused = s.sendmail(sender, rcpts, mta_setup.message(
            subject=subject, sender=sender or "mailer-daemon@remote.test",
            extra_headers=extra_headers))
        assert refused == {}, refused


def queue_list(env):
    return env.h.ctl("queue", "list", config=env.conf).stdout


def queue_ids(env):
    return re.findall(r"^([0-9A-F]{16}) ", queue_list(env), re.M)


def with_subject(sink, subject):
    return [m for m in sink.messages if f"Subject: {subject}\r\n".encode() in m.data]


def check_grouping_and_reuse(env):
    s1, s2 = env.shards["s1"], env.shards["s2"]
    send(env, "x@remote.test", [ALICE, BOB, CAROL], "grouped")
    mta_setup.wait_until("grouped delivery", lambda: len(with_subject(s1, "grouped")) == 2 and
               len(with_subject(s2, "grouped")) == 1)
    a, c = with_subject(s1, "grouped")
    assert a.conn_id == c.conn_id, "one LMTP transaction per shard"
    mails = [cmd for conn, cmd in s1.commands if conn == a.conn_id and cmd.startswith("MAIL")]
    assert mails and "SIZE=" in mails[0], mails
    assert re.search(r" XQUEUEID=[0-9A-F]{16}$", mails[0]), mails
    for i in range(6):
        send(env, "x@remote.test", [ALICE], f"reuse {i}")
    mta_setup.wait_until("reuse", lambda: all(with_subject(s1, f"reuse {i}") for i in range(6)))
    conns = {m.conn_id for i in range(6) for m in with_subject(s1, f"reuse {i}")}
    assert len(conns) <= 2, ("connections not reused", conns)


def check_per_recipient_replies(env):
    s1 = env.shards["s1"]
    calls = {"n": 0}

    def data_reply(rcpt):
        if rcpt == CAROL and calls["n"] == 0:
            calls["n"] += 1
            return (452, "4.2.2 mailbox full, try later")
        return None
    s1.data_reply = data_reply
    send(env, "x@remote.test", [ALICE, CAROL], "lmtp per rcpt")
    mta_setup.wait_until("alice", lambda: with_subject(s1, "lmtp per rcpt"))
    env.mta.wait_log(r"to=<carol@example.test> .*status=deferred \(452 4\.2\.2 mailbox full")
    # The retry schedule (2 s) brings carol's copy; alice's is not repeated.
    mta_setup.wait_until("carol after retry", lambda: len(with_subject(s1, "lmtp per rcpt")) == 2)
    got = with_subject(s1, "lmtp per rcpt")
    assert sorted(m.rcpt for m in got) == [ALICE, CAROL], got
    s1.data_reply = None


def check_shard_down(env):
    s2 = env.shards["s2"]
    s2.stop()
    send(env, "x@remote.test", [BOB], "while down 1")
    env.mta.wait_log(r"to=<bob@example.test> .*status=deferred")
    listing = mta_setup.wait_until("deferred in queue list",
                         lambda: (lambda t: t if "deferred" in t else None)(queue_list(env)))
    assert "<x@remote.test>" in listing and BOB in listing, listing
    (qid,) = queue_ids(env)
    shown = env.h.ctl("queue", "show", qid, config=env.conf).stdout
    assert f"rcpt: <{BOB}> state=deferred attempts=1" in shown, shown
    assert "last_error=451 4.4.2 LMTP" in shown, shown
    # Back, and `queue flush` (before the 2 s retry would).
    s2.start()
    env.h.ctl("queue", "flush", config=env.conf)
    mta_setup.wait_until("delivery after flush", lambda: with_subject(s2, "while down 1"))
    mta_setup.wait_until("empty queue", lambda: not queue_ids(env))

    # Down again; this time the retry schedule brings it.
    s2.stop()
    send(env, "x@remote.test", [BOB], "while down 2")
    env.mta.wait_log(r"status=deferred.*\n(.*\n)*.*status=deferred", timeout=10)
    s2.start()
    mta_setup.wait_until("delivery by schedule", lambda: with_subject(s2, "while down 2"))


def check_hold_release_delete(env):
    s2 = env.shards["s2"]
    s2.stop()
    send(env, "x@remote.test", [BOB], "held")
    send(env, "x@remote.test", [BOB], "deleted")
    ids = mta_setup.wait_until("two queued", lambda: (lambda i: i if len(i) == 2 else None)(queue_ids(env)))
    held, deleted = ids     # ids sort by arrival
    assert "held" in env.h.ctl("queue", "hold", held, config=env.conf).stdout
    assert "deleted" in env.h.ctl("queue", "delete", deleted, config=env.conf).stdout
    s2.start()
    env.h.ctl("queue", "flush", config=env.conf)
    time.sleep(1.5)
    assert not with_subject(s2, "held") and not with_subject(s2, "deleted")
    assert "held" in env.h.ctl("queue", "show", held, config=env.conf).stdout
    p = env.h.ctl("queue", "show", deleted, config=env.conf, check=False)
    assert p.returncode == 1 and "no such message" in p.stderr, p
    env.h.ctl("queue", "release", held, config=env.conf)
    mta_setup.wait_until("released", lambda: with_subject(s2, "held"))
    assert not with_subject(s2, "deleted")
    p = env.h.ctl("queue", "hold", "nonsense", config=env.conf, check=False)
    assert p.returncode == 2, p


def check_bounces(env):
    s1 = env.shards["s1"]
    s1.rcpt_reply = lambda rcpt: (550, "5.1.1 no such mailbox here") if rcpt == GONE else None
    send(env, ALICE, [GONE], "to be bounced")
    dsn = mta_setup.wait_until("DSN to alice", lambda: [m for m in s1.for_rcpt(ALICE)
                                              if m.mail_from == ""])[-1]
    text = dsn.data.decode()
    for needle in ("Content-Type: multipart/report; report-type=delivery-status",
                   "Content-Type: message/delivery-status",
                   "Final-Recipient: rfc822; gone@example.test",
                   "Action: failed", "Status: 5.1.1",
                   "Diagnostic-Code: smtp; 550 5.1.1 no such mailbox here",
                   "Subject: to be bounced", "From: Mail Delivery System",
                   "Reporting-MTA: dns; mx.example.test"):
        assert needle in text, (needle, text)
    # A bounce is never bounced: the null sender gets no DSN, but the
    # message is not dropped either: the postmaster gets a copy of it whole.
    n = len([m for m in s1.messages if m.mail_from == ""])
    send(env, "", [GONE], "null sender")
    env.mta.wait_log(r"to=<gone@example.test> .*status=bounced.*\n(.*\n)*.*"
                     r"to=<gone@example.test> .*status=bounced")
    copy = mta_setup.wait_until("postmaster copy", lambda: [
        m for m in s1.for_rcpt(POSTMASTER)
        if m.mail_from == "" and b"Subject: null sender" in m.data])
    assert len(copy) == 1, copy
    text = copy[0].data.decode()
    for needle in ("Subject: Postmaster Copy: Undelivered Mail",
                   "To: <postmaster@example.test>",
                   "Final-Recipient: rfc822; gone@example.test",
                   "Content-Type: message/rfc822", "Hello."):
        assert needle in text, (needle, text)
    time.sleep(1)
    assert len([m for m in s1.messages if m.mail_from == ""]) == n + 1

    # DSN options (RFC 3461): NOTIFY=SUCCESS brings a "delivered" report,
    # NOTIFY=NEVER silences the failure report, ENVID and ORCPT are echoed.
    n = len([m for m in s1.for_rcpt(ALICE) if m.mail_from == ""])
    with env.smtp() as s:
        s.ehlo("client.test")
        s.sendmail(ALICE, [CAROL, GONE], mta_setup.message(subject="dsn options"),
                   mail_options=["ENVID=env+2B42", "RET=HDRS"],
                   rcpt_options=["NOTIFY=SUCCESS,FAILURE", "ORCPT=rfc822;carol@example.test"])
    dsn = mta_setup.wait_until("success DSN", lambda: [m for m in s1.for_rcpt(ALICE)
                                             if m.mail_from == "" and b"dsn options" in m.data])
    text = dsn[-1].data.decode()
    for needle in ("Final-Recipient: rfc822; carol@example.test", "Action: delivered",
                   "Status: 2.0.0", "Original-Envelope-Id: env+42",
                   "Original-Recipient: rfc822;carol@example.test",
                   "Final-Recipient: rfc822; gone@example.test", "Action: failed"):
        assert needle in text, (needle, text)
    with env.smtp() as s:
        s.ehlo("client.test")
        s.sendmail(ALICE, [GONE], mta_setup.message(subject="never tell"),
                   rcpt_options=["NOTIFY=NEVER"])
    env.mta.wait_log(r"to=<gone@example.test> .*status=bounced(.*\n)*.*to=<gone@example.test> "
                     r".*status=bounced(.*\n)*.*to=<gone@example.test> .*status=bounced")
    time.sleep(0.8)
    assert not [m for m in s1.for_rcpt(ALICE) if b"never tell" in m.data]
    s1.rcpt_reply = None

    # A mail loop: more Received: lines than max_hops (5).
    loops = "".join(f"Received: from hop{i}.test by hop{i + 1}.test; "
                    f"Mon, 1 Jan 2024 00:00:0{i} +0000\r\n" for i in range(6))
    send(env, ALICE, [CAROL], "looping", extra_headers=loops)
    dsn = mta_setup.wait_until("loop DSN", lambda: [m for m in s1.for_rcpt(ALICE)
                                          if m.mail_from == "" and b"looping" in m.data])
    assert b"Status: 5.4.6" in dsn[-1].data, dsn[-1].data
    assert not with_subject(s1, "looping") or all(m.rcpt == ALICE for m in with_subject(s1, "looping"))


def test(h):
    env = mta_setup.MtaEnv(h, users={ALICE: "s1", BOB: "s2", CAROL: "s1", GONE: "s1",
                                  POSTMASTER: "s1"},
                           mta_options={"max_hops": "5",
                                        "delivery_concurrency": "2"})
    env.start_mta()
    check_grouping_and_reuse(env)
    check_per_recipient_replies(env)
    check_shard_down(env)
    check_hold_release_delete(env)
    check_bounces(env)
    mta_setup.wait_until("empty queue", lambda: not queue_ids(env))
    for sink in env.shards.values():
        assert not sink.errors, sink.errors
    env.mta.stop()


if __name__ == "__main__":
    mtharness.main(test)
