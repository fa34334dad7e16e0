#!/usr/bin/env python3
"""test-ledger-check.py -- ledger_check.py on hand-written ledgers: each way
a message can go wrong is counted as such (lost, duplicated, a deletion
that came back, corrupted, misdelivered), one that bounced and whose
failure report reached a person is counted bounced, not lost (and the
drain's rx_bounces finds such reports), the legitimate cases are not
(a RETR in a session whose QUIT failed and the same copy seen again; an
unacknowledged message that arrived or not), and a malformed line is an
error. Then the receiving digest of faults.py's drain (rx_digest) agrees
with loadgen/ledger.h's definition on a message with trace fields, and
`mailtier-load sink --ledger` writes the same digest and the recipients for
a message relayed to it with trace fields and a dot-stuffed line."""

import hashlib
import os
import smtplib
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import faults  # noqa: E402
import ledger_check  # noqa: E402

A, B, C = "a" * 64, "b" * 64, "c" * 64


def check(text):
    with tempfile.NamedTemporaryFile("w", suffix=".ledger", delete=False) as f:
        f.write(text)
    try:
        return ledger_check.check_files([f.name])
    finally:
        os.unlink(f.name)


def lines(*rows):
    return "ledger 1 0000000000010000 1\n" + "".join(r + "\n" for r in rows)


def main():
    # Delivered once to each recipient, locally and at the sink: ok.
    r = check(lines(f"1.0 sent R.1 {A} u1@x,far@remote",
                    f"2.0 pop R.1 u1@x {A} 9.1", "2.1 commit 9.1",
                    f"2.5 sink R.1 {A} far@remote"))
    assert r["ok"] and r["acknowledged"] == 1 and r["acknowledged_copies"] == 2, r
    assert r["delivered"] == 2 and r["lost"] == 0, r

    # Never seen: lost.
    r = check(lines(f"1.0 sent R.1 {A} u1@x,u2@x", f"2.0 pop R.1 u1@x {A} 9.1",
                    "2.1 commit 9.1"))
    assert not r["ok"] and r["lost"] == 1 and r["delivered"] == 1, r
    # Never seen, but a failure report about it reached a person: bounced,
    # not lost. A report about another recipient or message does not count.
    r = check(lines(f"1.0 sent R.1 {A} u1@x,u2@x", f"2.0 pop R.1 u1@x {A} 9.1",
                    "2.1 commit 9.1", "3.0 bounce R.1 U2@x"))
    assert r["ok"] and r["bounced"] == 1 and r["lost"] == 0, r
    r = check(lines(f"1.0 sent R.1 {A} u1@x,u2@x", f"2.0 pop R.1 u1@x {A} 9.1",
                    "2.1 commit 9.1", "3.0 bounce R.1 u3@x", "3.1 bounce R.2 u2@x"))
    assert not r["ok"] and r["lost"] == 1 and r["bounced"] == 0, r

    # The drain finds reports: a DSN quoting the original's headers, and the
    # postmaster's copy of a DSN that could not be returned (the DSN whole
    # inside); a success report and an ordinary message are not failures.
    dsn = [b"Return-Path: <>", b"Subject: Undelivered Mail Returned to Sender",
           b"Content-Type: multipart/report; report-type=delivery-status;", b"",
           b"--b", b"Content-Type: message/delivery-status", b"",
           b"Reporting-MTA: dns; mx.test", b"",
           b"Final-Recipient: rfc822; U2@x", b"Action: failed", b"Status: 5.3.4", b"",
           b"Final-Recipient: rfc822; u1@x", b"Action: delivered", b"Status: 2.0.0", b"",
           b"--b", b"Content-Type: text/rfc822-headers", b"",
           b"X-Mailtier-Load-Id: R.1", b"Subject: load", b"--b--"]
    assert faults.rx_bounces(dsn) == [("R.1", "u2@x")], faults.rx_bounces(dsn)
    copy = [b"Subject: Postmaster Copy: Undelivered Mail", b"",
            b"Final-Recipient: rfc822; ghost@x", b"Action: failed", b"",
            b"Content-Type: message/rfc822", b""] + dsn
    assert set(faults.rx_bounces(copy)) == {("R.1", "ghost@x"), ("R.1", "u2@x")}
    assert faults.rx_bounces([b"X-Mailtier-Load-Id: R.1", b"", b"Action: failed"]) == []

    # Seen in a session whose QUIT got no +OK, then again: one copy.
    r = check(lines(f"1.0 sent R.1 {A} u1@x", f"2.0 pop R.1 u1@x {A} 9.1",
                    f"3.0 pop R.1 u1@x {A} 9.2", "3.1 commit 9.2"))
    assert r["ok"] and r["duplicated"] == 0, r
    # Only in an uncommitted session (the +OK lost): delivered.
    r = check(lines(f"1.0 sent R.1 {A} u1@x", f"2.0 pop R.1 u1@x {A} 9.1"))
    assert r["ok"] and r["delivered"] == 1, r

    # Two committed copies, or two at the sink: duplicated.
    r = check(lines(f"1.0 sent R.1 {A} u1@x", f"2.0 pop R.1 u1@x {A} 9.1",
                    "2.1 commit 9.1", f"3.0 pop R.1 u1@x {A} 9.2", "3.1 commit 9.2"))
    assert not r["ok"] and r["duplicated"] == 1, r
    r = check(lines(f"1.0 sent R.1 {A} far@remote", f"2.0 sink R.1 {A} far@remote",
                    f"3.0 sink R.1 {A} far@remote"))
    assert not r["ok"] and r["duplicated"] == 1, r
    # A committed deletion that came back (seen later, uncommitted).
    r = check(lines(f"1.0 sent R.1 {A} u1@x", f"2.0 pop R.1 u1@x {A} 9.1",
                    "2.1 commit 9.1", f"3.0 pop R.1 u1@x {A} 9.2"))
    assert not r["ok"] and r["duplicated"] == 1, r

    # A different digest: corrupted (and a bad line's digest never matches).
    r = check(lines(f"1.0 sent R.1 {A} u1@x", f"2.0 pop R.1 u1@x {B} 9.1",
                    "2.1 commit 9.1"))
    assert not r["ok"] and r["corrupted"] == 1 and r["delivered"] == 1, r
    r = check(lines(f"1.0 sent R.1 {A} u1@x", f"2.0 pop R.1 u1@x bad-{A} 9.1"))
    assert not r["ok"] and r["corrupted"] == 1, r

    # In a mailbox it was not addressed to: misdelivered.
    r = check(lines(f"1.0 sent R.1 {A} u1@x", f"2.0 pop R.1 u1@x {A} 9.1",
                    f"2.0 pop R.1 u2@x {A} 9.3"))
    assert not r["ok"] and r["misdelivered"] == 1, r

    # Unacknowledged: arriving or not is fine; foreign ids are counted.
    r = check(lines(f"1.0 unacked R.1 {A} u1@x", f"1.5 unacked R.2 - u1@x",
                    f"2.0 pop R.1 u1@x {A} 9.1", f"2.0 pop Q.7 u1@x {C} 9.1",
                    f"2.0 pop - u1@x {C} 9.1", "2.1 commit 9.1"))
    assert r["ok"] and r["unacknowledged"] == 2 and r["unacknowledged_delivered"] == 1, r
    assert r["foreign"] == 2, r
    # Addresses compare without case.
    r = check(lines(f"1.0 sent R.1 {A} User1@X", f"2.0 pop R.1 user1@x {A} 9.1"))
    assert r["ok"], r

    # Malformed lines are errors.
    for bad in ("1.0 sent R.1", "x sent R.1 a b", "1.0 what R.1 a b c"):
        try:
            check(lines(bad))
        except ledger_check.LedgerError:
            continue
        raise AssertionError(f"accepted {bad!r}")

    # The drain's digest: trace fields on top are skipped, the rest is the
    # text sent, CRLF line ends.
    sent = b"Message-ID: <x>\r\nX-Mailtier-Load-Id: R.5\r\n\r\nbody\r\n"
    got = [b"Return-Path: <a@b>", b"Received: from x", b"\tby y; date",
           b"Received: from z", b"Message-ID: <x>", b"X-Mailtier-Load-Id: R.5",
           b"", b"body"]
    mid, digest = faults.rx_digest(got)
    assert mid == "R.5" and digest == hashlib.sha256(sent).hexdigest(), (mid, digest)

    # The C side: mailtier-load sink --ledger.
    sink_check(sent)
    print("PASS")
    return 0


def sink_check(sent):
    lg = faults.binary("loadgen/mailtier-load")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as d:
        ledger = os.path.join(d, "sink.ledger")
        p = subprocess.Popen([lg, "sink", "--listen", f"127.0.0.1:{port}", "--quiet",
                              "--ledger", ledger], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    smtp = smtplib.SMTP("127.0.0.1", port, timeout=10)
                    break
                except OSError:
                    assert time.monotonic() < deadline, "the sink did not start"
                    time.sleep(0.05)
            text = b"Return-Path: <a@b>\r\nReceived: from x\r\n\tby y\r\n" + sent + b".dot\r\n"
            smtp.sendmail("a@b", ["One@remote.test", "two@remote.test"], text)
            smtp.quit()
        finally:
            p.terminate()
            p.wait(timeout=10)
        rows = [l.split() for l in open(ledger) if " sink " in l]
    want = hashlib.sha256(sent + b".dot\r\n").hexdigest()
    assert len(rows) == 1 and rows[0][2:] == ["R.5", want, "One@remote.test,two@remote.test"], rows


if __name__ == "__main__":
    sys.exit(main())
