#!/usr/bin/env python3
"""test-mta-popstore.py -- end to end through two tiers: a message sent to
mailtier-mta over SMTP (swaks, curl, smtplib) is delivered over LMTP to the
real mailtier-popstore of each recipient's shard (mailHost, through
[shards]) and is retrievable there over POP3, byte-exact after the trace
lines the two tiers add; the store's log names the MTA's queue id
(XQUEUEID), so one grep follows the message across the tiers. A shard that
is stopped defers the message, which is delivered after the store is back
and `mailtierctl queue flush`; a user removed from the directory while
its mail waited is refused by the store at LMTP time, and the DSN arrives
in the sender's mailbox on the other shard. Skipped when
mailtier-popstore is not built."""

import re
import subprocess
import time

import mta_setup
import mtharness

ALICE, BOB, CAROL = "alice@example.test", "bob@example.test", "carol@example.test"


def strip_trace(data):
    """The client's message: drop the store's Return-Path: and Received:
    and the MTA's Received: (each Received: folded over several lines)."""
    lines = data.split(b"\r\n")
    assert lines[0].startswith(b"Return-Path: <"), lines[0]
    i = 1
    while lines[i].startswith(b"Received: ") or lines[i].startswith(b"\t"):
        i += 1
    return b"\r\n".join(lines[i:])


def retrieve(env, shard, user):
    p = env.pop(shard, user)
    count, _ = p.stat()
    msgs = [b"\r\n".join(p.retr(i + 1)[1]) + b"\r\n" for i in range(count)]
    p.quit()
    return msgs


def test(h):
    env = mta_setup.MtaEnv(h, users={ALICE: "s1", BOB: "s2", CAROL: "s2"},
                           popstore=True)
    stores = env.start_popstores()
    mta = env.start_mta()
    body = (b"From: <sender@remote.test>\r\nTo: <alice@example.test>\r\n"
            b"Subject: end to end\r\n\r\n.a dotted line\r\nplain line\r\n"
            + b"z" * 900 + b"\r\n")
    with env.smtp() as s:
        s.ehlo("client.test")
        s.sendmail("sender@remote.test", [ALICE, BOB], body)
    p = subprocess.run(["swaks", "--server", f"127.0.0.1:{env.smtp_port}", "--from",
                        "sw@remote.test", "--to", BOB, "--header", "Subject: swaks e2e",
                        "--body", "from swaks\n"], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
    qid = re.search(r"queued as ([0-9A-F]{16})", p.stdout).group(1)

    deadline_msgs = None
    for _ in range(100):
        a, b = retrieve(env, "s1", ALICE), retrieve(env, "s2", BOB)
        if len(a) >= 1 and len(b) >= 2:
            deadline_msgs = (a, b)
            break
        time.sleep(0.2)
    assert deadline_msgs, "messages did not arrive in the stores"
    a, b = deadline_msgs
    assert strip_trace(a[0]) == body, a[0][:400]
    assert any(strip_trace(m) == body for m in b)
    assert any(b"Subject: swaks e2e" in m for m in b)
    assert retrieve(env, "s2", BOB) and not [m for m in a if b"swaks" in m]
    # One grep: the MTA's queue id in the store's log.
    stores["s2"].wait_log(qid)
    mta.wait_log(rf"queue={qid} to=<bob@example.test> relay=s2\[.*status=sent")

    # Shard s2 down: deferred; back up and flushed: delivered. Meanwhile
    # carol (on s2) leaves the directory: the store refuses her at LMTP
    # time (the MTA's own answer is still cached) and alice gets the DSN.
    stores["s2"].stop()
    with env.smtp() as s:
        s.sendmail(ALICE, [BOB, CAROL], b"Subject: while s2 was down\r\n\r\nx\r\n")
    mta.wait_log(r"to=<bob@example.test> .*status=deferred")
    listing = h.ctl("queue", "list", config=env.conf).stdout
    assert "deferred" in listing and "carol@example.test" in listing, listing
    h.ctl("users", "del", CAROL, config=env.conf)
    stores["s2"] = h.start("popstore-s2-again", stores["s2"].argv)
    h.ctl("queue", "flush", config=env.conf)
    for _ in range(100):
        b = retrieve(env, "s2", BOB)
        dsn = [m for m in retrieve(env, "s1", ALICE) if b"delivery-status" in m]
        if any(b"while s2 was down" in m for m in b) and dsn:
            break
        time.sleep(0.2)
    assert any(b"while s2 was down" in m for m in b), "not delivered after flush"
    assert dsn and b"Final-Recipient: rfc822; carol@example.test" in dsn[0], dsn
    assert b"Action: failed" in dsn[0] and b"Status: 5.1.1" in dsn[0], dsn[0]
    mta.stop()
    for d in stores.values():
        d.stop()


if __name__ == "__main__":
    mtharness.main(test)
