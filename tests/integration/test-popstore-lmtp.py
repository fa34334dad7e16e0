#!/usr/bin/env python3
"""test-popstore-lmtp.py -- mailtier-popstore's LMTP side with Python's
smtplib.LMTP and raw sockets against a real slapd:

  - one reply per accepted recipient after DATA (RFC 2033 4.2): users,
    an alias of one of them (one copy, two replies), unknown (550 5.1.1),
    another shard's user (451 4.4.0 "not on this shard": temporary, a
    stale route must not bounce), a disabled user (550 5.2.1);
  - quota: 552 5.2.2, and 452 4.2.2 on a shard with quota_temporary;
  - SIZE over max_message_size: 552 5.3.4 at MAIL and after DATA;
  - the MTA's queue id (XQUEUEID) on the log lines and in Received:;
  - a redelivery with the same XQUEUEID and LHLO name: no second copy,
    250 "Already delivered uid=N" (store/store-dedupe.c);
  - bare LF in DATA: LF.LF does not end it, the message is refused with
    550 5.6.0 per recipient and not stored;
  - PIPELINING: a whole transaction in one write, replies in order;
  - bad input: HELO, commands out of order, a 600-octet line, NUL, unknown
    commands answer 5xx and the session goes on; too many errors: 421 and
    the connection is closed;
  - lmtp_clients: a client from 127.0.0.2 gets 554 5.7.1;
  - max_sessions: the connection over the limit gets 421 4.3.2;
  - idle_timeout: 421 4.4.2 and the connection is closed;
  - SIGTERM drain: a transaction in progress completes (250), then 421;
  - directory down: RCPT answers 451 4.4.3.
"""

import signal
import time

import mtharness
import popstorelib
from popstorelib import Lines, message

D = popstorelib.DOMAIN


def addr(user):
    return f"{user}@{D}"


def test(h):
    env = popstorelib.Env(h, shard_extra={
        "s2": "quota_temporary = yes\nmax_message_size = 64K\nmax_sessions = 3\n"
              "idle_timeout = 2s\n"})
    env.add_user(addr("alice"), "pw-alice")
    env.h.ctl("users", "add", addr("bob"), "--shard", "s1", "--alias",
              addr("bobby"), config=env.conf, input="pw-bob\n")
    env.add_user(addr("carol"), "pw-carol", shard="s2", quota="40K")
    env.add_user(addr("dave"), "pw-dave", status="disabled")
    env.add_user(addr("erin"), "pw-erin", quota="40K")
    s1 = env.start("s1")
    s2 = env.start("s2")

    # Multi-recipient delivery: one reply per accepted RCPT, in order.
    msg = message("multi", "hello\r\n")
    rcpts = [addr("alice"), addr("bob"), addr("bobby"), addr("nobody"),
             addr("carol"), addr("dave")]
    rr, dr = env.deliver("s1", "sender@remote.test", rcpts, msg,
                         queue_id="MTAQ0001")
    codes = [c for c, _ in rr]
    assert codes == [250, 250, 250, 550, 451, 550], rr
    assert rr[3][1].startswith(b"5.1.1"), rr[3]
    assert rr[4][1].startswith(b"4.4.0") and b"not on this shard" in rr[4][1], rr[4]
    assert rr[5][1].startswith(b"5.2.1"), rr[5]
    assert len(dr) == 3 and all(c == 250 for c, _ in dr), dr
    assert b"<alice@" in dr[0][1] and b"<bob@" in dr[1][1] and b"<bobby@" in dr[2][1], dr
    s1.wait_log(r"queue=MTAQ0001 lmtp delivered to=<bobby@example.test> "
                r"mailbox=bob@example.test")
    p = env.pop("s1", addr("bob"), "pw-bob")
    assert p.stat()[0] == 1, "alias and address got two copies"
    data = b"\r\n".join(p.retr(1)[1]) + b"\r\n"
    assert b"with LMTP id MTAQ0001\r\n\tfor <bob@example.test>;" in data, data[:300]
    assert popstorelib.strip_trace(data) == msg
    p.quit()

    # Redelivery (an MTA killed after the store committed): the same
    # XQUEUEID from the same LHLO name stores no second copy and answers
    # with the first copy's uid; the log says so. Another LHLO name (another
    # MTA) or no XQUEUEID is a new message.
    redo = message("redelivered", "once\r\n")
    _, first = env.deliver("s1", "s@remote.test", [addr("alice")], redo,
                           queue_id="MTAQ0002")
    _, again = env.deliver("s1", "s@remote.test", [addr("alice"), addr("bob")],
                           redo, queue_id="MTAQ0002")
    uid = first[0][1].split(b"uid=")[1]
    assert again[0] == (250, b"2.0.0 <alice@example.test> Already delivered uid=" + uid), again
    assert b"Delivered uid=" in again[1][1], again   # bob had not got it yet
    s1.wait_log(r"queue=MTAQ0002 lmtp duplicate to=<alice@example.test> "
                r"mailbox=alice@example.test uid=" + uid.decode())
    other = env.lmtp("s1", lhlo="mx2.example.test")
    _, dr = env.deliver("s1", "s@remote.test", [addr("alice")], redo, lm=other,
                        queue_id="MTAQ0002")
    assert b"Delivered uid=" in dr[0][1], dr
    other.quit()
    for _ in range(2):
        _, dr = env.deliver("s1", "s@remote.test", [addr("alice")], redo)
        assert b"Delivered uid=" in dr[0][1], dr
    p = env.pop("s1", addr("alice"), "pw-alice")
    subjects = [b"\r\n".join(p.top(i, 0)[1]).count(b"Subject: redelivered")
                for i in range(1, p.stat()[0] + 1)]
    assert sum(subjects) == 4, subjects     # first, mx2's, two without an id
    p.quit()
    p = env.pop("s1", addr("bob"), "pw-bob")
    assert p.stat()[0] == 2, "bob: the multi message and the redelivered one"
    p.quit()

    # Quota: permanent on s1, temporary on s2.
    big = message("big", (b"y" * 78 + b"\r\n") * 300)          # ~24 KB
    for shard, user, code, enh in (("s1", "erin", 552, b"5.2.2"),
                                   ("s2", "carol", 452, b"4.2.2")):
        _, dr = env.deliver(shard, "s@remote.test", [addr(user)], big)
        assert dr == [(250, dr[0][1])], dr
        _, dr = env.deliver(shard, "s@remote.test", [addr(user)], big)
        assert dr[0][0] == code and dr[0][1].startswith(enh), (shard, dr)

    # SIZE: declared too big at MAIL, and actually too big after DATA.
    lm = env.lmtp("s1")
    code, text = lm.mail("s@remote.test", ["SIZE=9000000"])
    assert (code, text[:5]) == (552, b"5.3.4"), (code, text)
    lm.quit()
    _, dr = env.deliver("s2", "s@remote.test", [addr("carol")],
                        message("huge", (b"z" * 998 + b"\r\n") * 80))
    assert dr[0][0] == 552 and dr[0][1].startswith(b"5.3.4"), dr

    # Bare LF: never ends DATA; the message is refused, one reply per
    # recipient, after the real CRLF.CRLF.
    sock = env.raw("s1", "lmtp")
    c = Lines(sock)
    assert c.line().startswith(b"220 ")
    c.send(f"LHLO mta.test\r\nMAIL FROM:<s@remote.test>\r\n"
           f"RCPT TO:<{addr('alice')}>\r\nRCPT TO:<{addr('bob')}>\r\nDATA\r\n")
    lines = [c.line() for _ in range(11)]
    assert lines[:8] == [b"250-" + lines[0][4:], b"250-PIPELINING",
                         b"250-ENHANCEDSTATUSCODES", b"250-8BITMIME",
                         b"250-SMTPUTF8", b"250-XQUEUEID", b"250 SIZE 8388608",
                         b"250 2.1.0 Sender OK"], lines
    assert lines[8].startswith(b"250 2.1.5") and lines[9].startswith(b"250 2.1.5"), lines
    assert lines[10].startswith(b"354 "), lines
    c.send(b"Subject: bare\r\n\r\nline\n.\nstill data\r\n.\r\n")
    r1, r2 = c.line(), c.line()
    assert r1.startswith(b"550 5.6.0") and r2.startswith(b"550 5.6.0"), (r1, r2)
    assert c.cmd("NOOP").startswith(b"250"), "session continues"

    # Bad input answers 5xx and the session goes on.
    assert c.cmd("HELO x").startswith(b"500 5.5.1")
    assert c.cmd("RCPT TO:<a@b.test>").startswith(b"503 5.5.1")
    assert c.cmd("DATA").startswith(b"503 5.5.1")
    assert c.cmd("X" * 600).startswith(b"500 5.5.2")
    assert c.cmd(b"NO\x00OP").startswith(b"500 5.5.2")
    assert c.cmd("FROB").startswith(b"500 5.5.1")
    assert c.cmd("MAIL FROM:<bad address>").startswith(b"501")
    assert c.cmd("NOOP").startswith(b"250")
    assert c.cmd("MAIL FROM:<s@remote.test> FOO=BAR").startswith(b"555 5.5.4")
    # ... until too many errors (max_errors = 10): 421 and closed.
    replies = [c.cmd("FROB") for _ in range(2)]
    assert replies[-1].startswith(b"500"), replies
    assert c.line().startswith(b"421 4.7.0"), "no 421 after too many errors"
    assert c.closed(), "connection not closed after too many errors"
    sock.close()

    # MAIL before LHLO; pipelined commands after a lookup keep their order.
    sock = env.raw("s1", "lmtp")
    c = Lines(sock)
    c.line()
    assert c.cmd("MAIL FROM:<s@remote.test>").startswith(b"503 5.5.1")
    sock.close()

    # lmtp_clients: 127.0.0.2 is not an MTA.
    sock = env.raw("s1", "lmtp", source="127.0.0.2")
    c = Lines(sock)
    assert c.line().startswith(b"554 5.7.1"), "non-MTA client not refused"
    sock.close()

    # idle_timeout (2 s on s2): 421 4.4.2, then closed.
    sock = env.raw("s2", "lmtp")
    c = Lines(sock)
    assert c.line().startswith(b"220")
    t0 = time.monotonic()
    sock.settimeout(10)
    assert c.line().startswith(b"421 4.4.2"), "no idle timeout"
    assert 1.5 < time.monotonic() - t0 < 6
    assert c.closed()
    sock.close()

    # max_sessions on s2 is 3: the 4th connection is refused with 421.
    held = [env.raw("s2", "lmtp") for _ in range(3)]
    for s in held:
        assert Lines(s).line().startswith(b"220")
    s4 = env.raw("s2", "lmtp")
    assert Lines(s4).line().startswith(b"421 4.3.2"), "over max_sessions"
    for s in held + [s4]:
        s.close()

    # SIGTERM while a transaction is open: it completes, then 421.
    lm = env.lmtp("s1")
    lm.mail("s@remote.test")
    assert lm.rcpt(addr("alice"))[0] == 250
    s1.send_signal(signal.SIGTERM)
    s1.wait_log(r"draining sessions=1")
    code, text = lm.data(message("during drain", "x\r\n"))
    assert code == 250, (code, text)
    code, text = lm.docmd("NOOP")
    assert code == 421, (code, text)
    s1.stop()
    s1.wait_log(r"exit status=0")

    # Directory down: a recipient not in the cache is a temporary failure.
    h.ctl("directory", "down", "--dir", env.dir)
    t0 = time.monotonic()
    rr, _ = env.deliver("s2", "s@remote.test", [addr("nobody-cached")], b"x")
    assert rr[0][0] == 451 and rr[0][1].startswith(b"4.4.3"), rr
    assert time.monotonic() - t0 < 10
    s2.stop()


if __name__ == "__main__":
    mtharness.main(test)
