#!/usr/bin/env python3
"""test-shard-sites.py -- a shard listed with several sites in [shards]
(NAME = SITE | SITE | SITE: a replication group, of which only the master
takes sessions). Real slapd, a real mailtier-popstore for the live site,
real mailtier-mta and mailtier-mmp, real sockets. The shard's sites, in
[shards] order:

  1. nothing listening (a host that is down: connect refused),
  2. a replica: a stand-in that refuses every session at its greeting the
     way a store replica does (LMTP "421 4.3.2 replica of shard s1, master
     is ...", POP3 "-ERR [SYS/TEMP] replica ...", IMAP "* BYE
     [UNAVAILABLE] replica ...") and closes,
  3. the live store (the master).

  (a) Mail through the MTA reaches the live site at once: the MTA tries
      site 1, then 2, then 3 in the same attempt; no deferral, no bounce;
      the next messages go straight to site 3 (the last known good).
  (b) POP3 and IMAP logins through the MMP reach the live site: site 1 and
      site 2 fail (the replica's refusal is logged), the login succeeds;
      the next login goes to site 3 first.
  (c) The live store stopped too (no site takes mail): a message is
      accepted with 250 by the MTA, tried for shard_failover_budget (3 s),
      then deferred (4xx, kept in the queue) — never bounced, no DSN; once
      the store is back, the next retry delivers it, once.
  (d) The same for the MMP: a login answers -ERR [SYS/TEMP] / NO
      [UNAVAILABLE] after backend_failover_wait (2 s), not at once, not
      later.
  (e) A site that answers 451 4.3.0 ("not replicated") after DATA: the
      message goes to the shard's next site with the same queue id
      (XQUEUEID) in the same attempt, delivered once.
  (f) A site that accepts the connection but never greets: the next site
      after 5 s (not after client_timeout).
  (g) SIGTERM while a delivery waits for the shard's next site: the MTA
      stops within the drain bound with the recipient deferred; restarted
      with a live site, it delivers it once.
  (h) mailtier-load fill --lmtp-shards fills such a shard on the site that
      greets 220.

Skipped when mailtier-popstore is not built."""

import os
import re
import smtplib
import socket
import subprocess
import threading
import time
import imaplib
import poplib

import lmtpd
import mmp_setup
import mtharness

D = mmp_setup.DOMAIN
ALICE, BOB = f"alice@{D}", f"bob@{D}"
PW = "pw-sites"


class Replica:
    """A store replica's refusals: each listener writes its protocol's
    refusal line and closes, as a site that is not master does."""

    LINES = {
        "lmtp": b"421 4.3.2 replica of shard s1, master is 127.0.0.1:9\r\n",
        "pop3": b"-ERR [SYS/TEMP] replica of shard s1, master is 127.0.0.1:9\r\n",
        "imap": b"* BYE [UNAVAILABLE] replica of shard s1, master is 127.0.0.1:9\r\n",
    }

    def __init__(self):
        self.ports = {}
        self.connections = {k: 0 for k in self.LINES}
        self.socks = []
        self.lock = threading.Lock()
        for proto in self.LINES:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", 0))
            s.listen(64)
            self.ports[proto] = s.getsockname()[1]
            self.socks.append(s)
            threading.Thread(target=self._serve, args=(s, proto),
                             daemon=True).start()

    def _serve(self, sock, proto):
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections[proto] += 1
            try:
                conn.sendall(self.LINES[proto])
            except OSError:
                pass
            conn.close()

    def close(self):
        for s in self.socks:
            s.close()


def site(lmtp, pop3, imap):
    return f"127.0.0.1:{lmtp}, 127.0.0.1:{pop3}, 127.0.0.1:{imap}"


def write_conf(c, name, sites, mta_extra="", budget="3s", queue=None):
    """The cluster's config with s1 = the given sites and an [mta]."""
    smtp, submission, metrics = mtharness.free_ports(3)
    path = c.write_conf(name, {"backend_failover_wait": "2s",
                               "backend_connect_timeout": "1s",
                               "shard_retry_interval": "30s"})
    with open(path) as f:
        text = f.read()
    text, n = re.subn(r"(?m)^s1 = .*$", "s1 = " + " | ".join(sites), text)
    assert n == 1, text
    text += ("\n[mta]\n"
             f"smtp_listen = 127.0.0.1:{smtp}\n"
             f"submission_listen = 127.0.0.1:{submission}\n"
             "submissions_listen =\n"
             f"queue_dir = {os.path.join(c.dir, 'queue-' + (queue or name))}\n"
             "hostname = mx.example.test\n"
             f"metrics_listen = 127.0.0.1:{metrics}\n"
             f"shard_failover_budget = {budget}\n"
             "retry_schedule = 4s\n"
             "max_queue_lifetime = 10m\n" + mta_extra)
    with open(path, "w") as f:
        f.write(text)
    return path, smtp, metrics


def metric(port, name):
    """A counter's value from the MTA's /metrics."""
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(r"(?m)^" + re.escape(name) + r" (\S+)$", text)
    return float(m.group(1)) if m else None


def send(smtp_port, subject, to=ALICE):
    with smtplib.SMTP("127.0.0.1", smtp_port, timeout=30) as s:
        s.sendmail("sender@remote.test", [to],
                   f"Subject: {subject}\r\n\r\nbody\r\n".encode())


def pop_subjects(c, user):
    """The subjects in user's mailbox, read straight from the live store."""
    p = poplib.POP3("127.0.0.1", c.pop3_port["s1"], timeout=15)
    p.user(user)
    p.pass_(PW)
    n = p.stat()[0]
    out = []
    for i in range(n):
        head = b"\n".join(p.top(i + 1, 0)[1]).decode()
        m = re.search(r"(?m)^Subject: (.*)$", head)
        out.append(m.group(1) if m else "")
    p.quit()
    return out


def count(pattern, text):
    return len(re.findall(pattern, text))


def test(h):
    c = mmp_setup.Cluster(h, users={ALICE: (PW, "s1"), BOB: (PW, "s1")},
                          mail={BOB: ["Subject: hello bob\n\nhi\n"]},
                          shards=("s1",), backend="popstore")
    replica = Replica()
    h.add_cleanup(replica.close)
    dead = mtharness.free_ports(3)
    live = (c.lmtp_port["s1"], c.pop3_port["s1"], c.imap_port["s1"])
    rep = (replica.ports["lmtp"], replica.ports["pop3"], replica.ports["imap"])
    conf, smtp_port, metrics_port = write_conf(c, "sites.conf",
                                 [site(*dead), site(*rep), site(*live)])
    mta = h.start("mta", [mtharness.binary("mta/mailtier-mta"), "-f", "-c", conf])
    c.mmp = h.start("mmp", [mtharness.binary("mmp/mailtier-mmp"), "-c", conf, "-f"],
                    ready_timeout=60)
    live_relay = re.escape(f"s1[127.0.0.1:{live[0]}]")

    # (a) The MTA finds the live site in the first attempt.
    t0 = time.monotonic()
    send(smtp_port, "first")
    mta.wait_log(rf"to=<alice@example\.test> relay={live_relay} .*status=sent",
                 timeout=10)
    first = time.monotonic() - t0
    for i in range(4):
        send(smtp_port, f"more {i}")
    mtharness_wait(lambda: count(rf"relay={live_relay} .*status=sent", mta.log()) == 5,
                   "five deliveries to the live site")
    log = mta.log()
    assert "status=deferred" not in log and "status=bounced" not in log, log
    assert count(r"shard=s1 site=1 event=site_failed", log) >= 1, log
    assert count(r"shard=s1 site=2 event=site_failed reason=.*421 4\.3\.2 replica", log) >= 1, log
    assert replica.connections["lmtp"] >= 1
    lmtp_tries = replica.connections["lmtp"]
    assert sorted(pop_subjects(c, ALICE)) == sorted(
        ["first"] + [f"more {i}" for i in range(4)]), pop_subjects(c, ALICE)
    h.note(f"(a) MTA: site 1 refused, site 2 a replica (421), delivered on "
           f"site 3 in {first:.2f} s; 4 more straight to site 3, no deferral")

    # (b) The MMP: POP3 and IMAP logins reach the live site.
    t0 = time.monotonic()
    p = c.login(ALICE, PW)
    assert p.stat()[0] == 5
    p.quit()
    pop_time = time.monotonic() - t0
    c.wait_session(user=ALICE, shard="s1", result="ok")
    mlog = c.mmp.log()
    assert re.search(r"login user=alice@example\.test shard=s1 site=1 "
                     r"result=site_failed", mlog), mlog
    assert re.search(r"shard=s1 site=2 result=site_failed .*answer=-ERR "
                     r"\[SYS/TEMP\] replica of shard s1", mlog), mlog
    t0 = time.monotonic()
    m = c.imap_login(BOB, PW)
    typ, data = m.select("INBOX")
    assert typ == "OK" and data == [b"1"], (typ, data)
    m.logout()
    imap_time = time.monotonic() - t0
    c.wait_session(user=BOB, shard="s1", result="ok")
    # The last master is tried first: IMAP went straight to site 3.
    assert replica.connections["imap"] == 0, replica.connections
    pops = replica.connections["pop3"]
    p = c.login(ALICE, PW)
    p.quit()
    assert replica.connections["pop3"] == pops, "a second login tried the replica"
    h.note(f"(b) MMP: POP3 login via sites 1, 2, 3 in {pop_time:.2f} s; IMAP "
           f"straight to the last master in {imap_time:.2f} s")

    # (c) No site takes mail: deferred after the budget, never bounced.
    c.stop_shard("s1")
    t0 = time.monotonic()
    send(smtp_port, "while down")       # 250: queued
    line = mta.wait_log(r"to=<alice@example\.test> relay=\S+ delay=\S+ "
                        r"status=deferred \((.*)\)", timeout=15)
    deferred_after = time.monotonic() - t0
    assert 2.5 <= deferred_after <= 8, deferred_after
    assert line.group(1).startswith("451 "), line.group(0)
    assert "failover_budget_spent" in mta.log()
    spent = metric(metrics_port, 'mailtier_mta_shard_failovers_total{result="budget_spent"}')
    retries = metric(metrics_port, 'mailtier_mta_shard_failovers_total{result="retry"}')
    assert spent == 1 and retries >= 4, (spent, retries)
    assert replica.connections["lmtp"] > lmtp_tries + 1, "no polling of the sites"

    # (d) The MMP answers a temporary failure after backend_failover_wait.
    for proto in ("pop3", "imap"):
        t0 = time.monotonic()
        try:
            if proto == "pop3":
                c.login(ALICE, PW)
            else:
                c.imap_login(ALICE, PW)
            raise AssertionError(f"{proto} login with no live site")
        except poplib.error_proto as e:
            assert str(e).startswith("b'-ERR [SYS/TEMP]"), e
        except imaplib.IMAP4.error as e:
            assert "[UNAVAILABLE]" in str(e), e
        took = time.monotonic() - t0
        assert 1.9 <= took <= 5, (proto, took)
        h.note(f"(d) MMP {proto} login with no master: temporary failure "
               f"after {took:.2f} s")

    # The store is back: the next retry delivers, once.
    c.start_shard("s1")
    mtharness_wait(lambda: count(rf"relay={live_relay} .*status=sent", mta.log()) == 6,
                   "the deferred message delivered after the store's return",
                   timeout=30)
    log = mta.log()
    assert "status=bounced" not in log, log
    assert "sender notification" not in log and "postmaster copy" not in log, log
    subjects = pop_subjects(c, ALICE)
    assert subjects.count("while down") == 1, subjects
    h.note(f"(c) no live site: 250, deferred (451) after {deferred_after:.2f} s "
           f"(budget 3 s), delivered once after the store's return, no bounce")
    mta.stop()

    # (e) 451 after DATA on one site: the next site, same queue id.
    sink = lmtpd.MailSink(lmtp=True, name="not-replicated").start()
    h.add_cleanup(sink.stop)
    sink.data_reply = lambda rcpt: (451, "4.3.0 not replicated, try again")
    rep451 = (sink.port, dead[1], dead[2])
    conf2, smtp2, _ = write_conf(c, "sites451.conf", [site(*rep451), site(*live)])
    mta2 = h.start("mta-451", [mtharness.binary("mta/mailtier-mta"), "-f", "-c", conf2])
    send(smtp2, "not replicated first")
    line = mta2.wait_log(rf"queue=(\S+) .*to=<alice@example\.test> relay={live_relay} "
                         r".*status=sent", timeout=10)
    log = mta2.log()
    assert "status=deferred" not in log, log
    mails = [cmd for _, cmd in sink.commands if cmd.upper().startswith("MAIL")]
    ids = {m.split("XQUEUEID=")[1].split()[0] for m in mails if "XQUEUEID=" in m}
    assert len(ids) == 1, mails
    qid = ids.pop()
    store_log = c.shard_daemons["s1"].log()
    assert qid in store_log, (qid, store_log[-2000:])
    assert pop_subjects(c, ALICE).count("not replicated first") == 1
    h.note(f"(e) 451 after DATA on site 1: delivered on site 2 in the same "
           f"attempt with the same XQUEUEID ({qid})")
    mta2.stop()

    # (f) A site that accepts connections but never greets (a stopped
    # store, a host cut off): the next site after 5 s, not client_timeout.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    h.add_cleanup(silent.close)
    mute = (silent.getsockname()[1], dead[1], dead[2])
    conf3, smtp3, _ = write_conf(c, "silent.conf", [site(*mute), site(*live)],
                              "client_timeout = 5m\n")
    mta3 = h.start("mta-silent", [mtharness.binary("mta/mailtier-mta"), "-f", "-c", conf3])
    t0 = time.monotonic()
    send(smtp3, "after a silent site")
    mta3.wait_log(rf"to=<alice@example\.test> relay={live_relay} .*status=sent",
                  timeout=15)
    took = time.monotonic() - t0
    assert 4.5 <= took <= 9, took
    assert "status=deferred" not in mta3.log()
    assert re.search(r"site=1 event=site_failed reason=.*timeout in state greeting",
                     mta3.log()), mta3.log()
    h.note(f"(f) a site that never greets: delivered on the next in {took:.2f} s")
    mta3.stop()

    # (g) SIGTERM while a delivery waits for its shard's next site: the
    # MTA stops within the drain bound, the recipient deferred (not lost,
    # not bounced); restarted with a live site, it is delivered once.
    conf4, smtp4, _ = write_conf(c, "drain.conf", [site(*dead), site(*rep)],
                                 budget="60s", queue="drain")
    mta4 = h.start("mta-drain", [mtharness.binary("mta/mailtier-mta"), "-f", "-c", conf4])
    send(smtp4, "during a drain")
    time.sleep(1.5)
    assert "status=" not in mta4.log(), "the job left its failover early"
    took = mta4.stop()
    assert took < 4, took
    assert re.search(r"to=<alice@example\.test> .*status=deferred", mta4.log()), mta4.log()
    conf5, smtp5, _ = write_conf(c, "drain-live.conf", [site(*dead), site(*live)],
                                 queue="drain")
    mta5 = h.start("mta-drain-2", [mtharness.binary("mta/mailtier-mta"), "-f", "-c", conf5])
    mtharness_wait(lambda: "during a drain" in " ".join(pop_subjects(c, ALICE)),
                   "the drained message delivered after the restart", timeout=30)
    assert pop_subjects(c, ALICE).count("during a drain") == 1
    assert "status=bounced" not in mta5.log() + mta4.log()
    h.note(f"(g) SIGTERM during a failover: stopped in {took:.2f} s, deferred, "
           f"delivered once after the restart")
    mta5.stop()

    # (h) mailtier-load fill --lmtp-shards fills a shard of several sites
    # on the first that greets 220 (here the last: nothing, a replica, a sink).
    fill_sink = lmtpd.MailSink(lmtp=True, name="fill-master").start()
    h.add_cleanup(fill_sink.stop)
    fconf = os.path.join(c.dir, "fill.conf")
    with open(fconf, "w") as f:
        f.write(f"[loadgen]\nusers = 5\ndomain = {D}\nconcurrency = 2\n[shards]\n"
                f"s1 = 127.0.0.1:{dead[0]}, 127.0.0.1:{dead[1]} | "
                f"127.0.0.1:{rep[0]}, 127.0.0.1:{rep[1]} | "
                f"127.0.0.1:{fill_sink.port}, 127.0.0.1:1\n")
    out = subprocess.run([mtharness.binary("loadgen/mailtier-load"), "fill", "--config",
                          fconf, "--lmtp-shards", "--seed", "3", "--progress", "0"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    m = re.search(r"messages planned (\d+), accepted (\d+)", out.stdout)
    assert m and int(m.group(1)) == int(m.group(2)) == len(fill_sink.messages) > 0, \
        (out.stdout, len(fill_sink.messages))
    h.note(f"(h) fill --lmtp-shards: {m.group(2)} messages on the site that greets 220")


def mtharness_wait(cond, what, timeout=15.0):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


if __name__ == "__main__":
    mtharness.main(test)
