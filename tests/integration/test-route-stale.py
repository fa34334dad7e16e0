#!/usr/bin/env python3
"""test-route-stale.py -- a user's mailHost changes (a mailbox move) while
the MTA and the MMP still hold the old lookup in their directory caches
(cache_ttl 60 s). Real slapd, real mailtier-popstore shards s1 and s2,
real mailtier-mta and mailtier-mmp, real sockets:

  (a) LMTP straight to the old shard s1 for the user: 451 4.4.0 "not on
      this shard" (temporary: during a move or with a stale directory a
      550 would bounce mail already accepted); an unknown user still 550
      5.1.1; a POP3 login straight to s1: -ERR [SYS/TEMP];
  (b) a message through the MTA: s1 refuses it with that 451, the MTA
      drops the user's cached lookup (mt_dirsvc_forget), looks the user up
      again and delivers to s2 in the same attempt: no deferral, no bounce,
      no DSN;
  (c) logins through the MMP (POP3 and IMAP, each for a user whose login
      the MMP has cached): s1 refuses the proxied login ("This mailbox is
      not on this server"), the MMP drops the cached entries, looks the
      shard up again and the client is logged in to s2.

The old shard is restarted after the change so that its own directory
cache (same config, same TTL) holds the new mailHost: the store's view is
what tells the other tiers theirs is stale. Skipped when mailtier-popstore
is not built."""

import os
import poplib
import smtplib
import subprocess
import time

import mmp_setup
import mtharness

D = mmp_setup.DOMAIN
ALICE, CAROL, NOBODY = f"alice@{D}", f"carol@{D}", f"nobody@{D}"
PW = "pw-route"


def mta_conf(c):
    """The cluster's config with an [mta] section; the MTA's ports."""
    smtp, submission = mtharness.free_ports(2)
    path = c.write_conf("mta.conf", {})
    with open(path, "a") as f:
        f.write("\n[mta]\n"
                f"smtp_listen = 127.0.0.1:{smtp}\n"
                f"submission_listen = 127.0.0.1:{submission}\n"
                "submissions_listen =\n"
                f"queue_dir = {os.path.join(c.dir, 'queue')}\n"
                "hostname = mx.example.test\n"
                "retry_schedule = 30s\n"
                "max_queue_lifetime = 10m\n"
                # No idle LMTP connection outlives s1's restart below.
                "connection_cache_time = 0\n")
    return path, smtp


def set_mailhost(c, address, shard):
    """ldapmodify as the admin DN from `mailtierctl directory up`."""
    conf = {}
    with open(os.path.join(c.dir, "directory.conf")) as f:
        for line in f:
            k, sep, v = line.partition(" = ")
            if sep:
                conf[k.strip()] = v.strip()
    ldif = (f"dn: uid={address},{conf['base_dn']}\nchangetype: modify\n"
            f"replace: mailHost\nmailHost: {shard}\n")
    subprocess.run(["ldapmodify", "-x", "-H", conf["uris"], "-D",
                    conf["admin_dn"], "-y", conf["admin_password_file"]],
                   input=ldif, text=True, check=True, capture_output=True,
                   timeout=30)


def pop_count(c, shard, user):
    """Messages in user's mailbox, read straight from shard's POP3."""
    p = poplib.POP3("127.0.0.1", c.pop3_port[shard], timeout=15)
    p.user(user)
    p.pass_(PW)
    n = p.stat()[0]
    subjects = [b"\r\n".join(p.top(i + 1, 0)[1]) for i in range(n)]
    p.quit()
    return n, subjects


def send(smtp_port, subject):
    with smtplib.SMTP("127.0.0.1", smtp_port, timeout=30) as s:
        s.sendmail("sender@remote.test", [ALICE],
                   f"Subject: {subject}\r\n\r\nbody\r\n".encode())


def test(h):
    c = mmp_setup.Cluster(h, users={ALICE: (PW, "s1"), CAROL: (PW, "s1")},
                          mail={ALICE: ["Subject: first\n\nhi\n"]},
                          backend="popstore")
    conf, smtp_port = mta_conf(c)
    mta = h.start("mta", [mtharness.binary("mta/mailtier-mta"), "-f", "-c", conf])
    c.start_mmp()

    # The MTA and the MMP learn (and cache) that both users live on s1.
    send(smtp_port, "before the move")
    mta.wait_log(r"to=<alice@example\.test> relay=s1\S* .*status=sent")
    p = c.login(ALICE, PW)
    assert p.stat()[0] == 2, "alice's two messages on s1"
    p.quit()
    c.wait_session(user=ALICE, shard="s1", result="ok")
    m = c.imap_login(CAROL, PW)
    m.logout()
    c.wait_session(user=CAROL, shard="s1", result="ok")

    # The move's switch: mailHost s1 -> s2. s1 is restarted so that its
    # own cache has the new answer; the MTA's and the MMP's do not.
    set_mailhost(c, ALICE, "s2")
    set_mailhost(c, CAROL, "s2")
    c.stop_shard("s1")
    c.start_shard("s1")

    # (a) LMTP to the old shard: temporary, not a bounce.
    with smtplib.LMTP("127.0.0.1", c.lmtp_port["s1"], timeout=15) as l:
        l.ehlo_or_helo_if_needed = lambda: None
        l.docmd("LHLO", "test.client")
        assert l.docmd("MAIL", "FROM:<s@remote.test>")[0] == 250
        code, text = l.docmd("RCPT", f"TO:<{ALICE}>")
        assert code == 451 and text.startswith(b"4.4.0") and \
            b"not on this shard" in text, (code, text)
        code, text = l.docmd("RCPT", f"TO:<{NOBODY}>")
        assert code == 550 and text.startswith(b"5.1.1"), (code, text)
    # A direct POP3 login on s1 is refused as temporary too (RFC 3206).
    try:
        pop_count(c, "s1", ALICE)
        raise AssertionError("alice logged in on s1 after the move")
    except poplib.error_proto as e:
        assert str(e).startswith("b'-ERR [SYS/TEMP]") and \
            "not on this server" in str(e), e
    h.note("(a) LMTP to s1 after the move: 451 4.4.0, unknown user 550 5.1.1; "
           "POP3 login on s1: -ERR [SYS/TEMP]")

    # (b) Through the MTA, whose cache still says s1: delivered to s2.
    send(smtp_port, "after the move")
    line = mta.wait_log(r"to=<alice@example\.test> relay=s2\S* .*status=sent.*",
                        timeout=20)
    log = mta.log()
    assert "route=stale" in log, "the MTA did not see the stale route"
    assert "status=deferred" not in log and "status=bounced" not in log, log
    assert "sender notification" not in log and "postmaster copy" not in log, log
    n, subjects = pop_count(c, "s2", ALICE)
    assert n == 1 and b"Subject: after the move" in subjects[0], subjects
    h.note(f"(b) MTA: stale route, delivered to s2 in the same attempt: {line.group(0)}")

    # (c) Through the MMP, whose cache still says s1: logged in on s2.
    p = c.login(ALICE, PW)
    n = p.stat()[0]
    assert n == 1, f"alice's mailbox on s2 has 1 message, the MMP found {n}"
    p.quit()
    c.wait_session(user=ALICE, shard="s2", result="ok")
    m = c.imap_login(CAROL, PW)
    typ, data = m.select("INBOX")
    assert typ == "OK", (typ, data)
    m.logout()
    c.wait_session(user=CAROL, shard="s2", result="ok")
    mmp_log = c.mmp.log()
    assert mmp_log.count("route=stale") == 2, mmp_log
    h.note("(c) MMP: POP3 and IMAP logins refused by s1 reach s2")
    mta.stop()


if __name__ == "__main__":
    mtharness.main(test)
