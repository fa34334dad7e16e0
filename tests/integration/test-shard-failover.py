#!/usr/bin/env python3
"""test-shard-failover.py -- the MTA and the MMP follow a replicated shard's
master (issue #38 item 6). One shard s1 as three real mailtier-popstore
sites in a Berkeley DB replication group (the first founds it with
--create-group, the other two join), listed in [shards] as
`s1 = SITE | SITE | SITE`; a real slapd, a real mailtier-mta and
mailtier-mmp, real sockets:

  (a) mail through the MTA (SMTP in, LMTP out) goes to the master; the
      replicas' "421 4.3.2 replica ..." greetings are not failures of the
      mail;
  (b) kill -9 of the master while the MTA delivers a stream of messages:
      another site is elected, the MTA follows it within its
      shard_failover_budget, and every message the MTA answered 250 is in
      the mailbox exactly once (POP3 on the new master): none lost, none
      twice (a transaction cut off by the kill goes again with the same
      XQUEUEID, which the new master's replicated delivered.db recognises),
      no bounce, no DSN, no deferral;
  (c) POP3 and IMAP logins through the MMP after the kill reach the new master
      (the old one refuses the connection, the replica that was not
      elected refuses at its greeting).

Skipped when mailtier-popstore is not built."""

import imaplib
import os
import poplib
import re
import smtplib
import threading
import time

import mtharness
import repl_shard

D = "example.test"
USER = f"alice@{D}"
PW = "pw-failover"
SECRET = "proxy-secret-failover-test"


class Group(repl_shard.Shard):
    """Three store sites of s1, the MTA and the MMP, one config file."""

    def __init__(self, h):
        ds = h.directory_up(shards=("s1",))
        super().__init__(h, ds["dir"])
        ports = h.free_ports(4)
        self.smtp, self.submission, self.mmp_pop3, self.mmp_imap = ports
        self.secret = os.path.join(self.dir, "proxy.secret")
        with open(self.secret, "w") as f:
            f.write(SECRET + "\n")
        self.write_conf(
            popstore="allow_plaintext_auth = yes\n"
            f"proxy_password_file = {self.secret}\n"
            "replication_ack_timeout = 1s\n",
            extra="\n[mta]\n"
            f"smtp_listen = 127.0.0.1:{self.smtp}\n"
            f"submission_listen = 127.0.0.1:{self.submission}\n"
            "submissions_listen =\n"
            f"queue_dir = {os.path.join(self.dir, 'queue')}\n"
            "hostname = mx.example.test\n"
            "shard_failover_budget = 60s\n"
            "retry_schedule = 30s\n"
            "max_queue_lifetime = 10m\n"
            "\n[mmp]\n"
            f"pop3_listen = 127.0.0.1:{self.mmp_pop3}\n"
            "pop3s_listen =\nthreads = 2\nallow_plaintext_auth = yes\n"
            f"imap_listen = 127.0.0.1:{self.mmp_imap}\n"
            f"proxy_password_file = {self.secret}\n"
            "backend_connect_timeout = 2s\nbackend_failover_wait = 20s\n"
            "stats_interval = 0\n",
            file="failover.conf")
        h.ctl("users", "add", USER, "--shard", "s1", config=self.conf,
              input=PW + "\n")


class Sender:
    """Numbered messages to USER through the MTA's SMTP listener, one
    session reused; the numbers answered 250 after DATA."""

    def __init__(self, port):
        self.port = port
        self.accepted = []
        self.refused = []
        self.smtp = None

    def send(self, n):
        if self.smtp is None:
            self.smtp = smtplib.SMTP("127.0.0.1", self.port, timeout=30)
        body = (f"From: sender@remote.test\r\nTo: {USER}\r\nSubject: fo-{n:05d}\r\n"
                f"Message-ID: <fo-{n}@remote.test>\r\n\r\nmessage {n}\r\n")
        try:
            self.smtp.sendmail("sender@remote.test", [USER], body.encode())
            self.accepted.append(n)
        except smtplib.SMTPException as e:
            self.refused.append((n, repr(e)))
            self.smtp = None

    def close(self):
        if self.smtp is not None:
            self.smtp.quit()


def sent_count(mta):
    return len(re.findall(r"to=<alice@example\.test> relay=\S+ .*status=sent",
                          mta.log()))


def wait(cond, what, timeout):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out ({timeout:.0f} s) waiting for {what}")
        time.sleep(0.1)


def pop_numbers(port, user=USER, password=PW):
    p = poplib.POP3("127.0.0.1", port, timeout=15)
    p.user(user)
    p.pass_(password)
    n = p.stat()[0]
    out = []
    for i in range(n):
        for line in p.top(i + 1, 0)[1]:
            m = re.match(rb"Subject: fo-(\d+)", line)
            if m:
                out.append(int(m.group(1)))
    p.quit()
    return out


def test(h):
    repl_shard.require_popstore()
    g = Group(h)
    g.start_group()
    mta = h.start("mta", [mtharness.binary("mta/mailtier-mta"), "-f", "-c", g.conf])
    mmp = h.start("mmp", [mtharness.binary("mmp/mailtier-mmp"), "-c", g.conf, "-f"],
                  ready_timeout=60)

    # (a) The MTA delivers to the master.
    sender = Sender(g.smtp)
    for n in range(10):
        sender.send(n)
    wait(lambda: sent_count(mta) == 10, "10 deliveries before the kill", 30)
    assert re.search(rf"relay=s1\[127\.0\.0\.1:{g.lmtp['a']}\]", mta.log())

    # (b) kill -9 of the master under delivery.
    stop = threading.Event()

    def load():
        n = 10
        while not stop.is_set() and n < 2000:
            sender.send(n)
            n += 1

    t = threading.Thread(target=load)
    t.start()
    wait(lambda: sent_count(mta) >= 40, "40 deliveries under load", 60)
    killed_at = time.monotonic()
    g.daemons["a"].kill()
    h.note(f"killed the master (site a) after {sent_count(mta)} deliveries, "
           f"{len(sender.accepted)} accepted")
    new_lmtp = {s: rf"relay=s1\[127\.0\.0\.1:{g.lmtp[s]}\] .*status=sent"
                for s in ("b", "c")}
    wait(lambda: any(re.search(p, mta.log()) for p in new_lmtp.values()),
         "a delivery on the new master", 60)
    failover = time.monotonic() - killed_at
    time.sleep(2)       # more load on the new master
    stop.set()
    t.join(60)
    assert not t.is_alive()
    sender.close()
    assert not sender.refused, sender.refused[:5]
    accepted = len(sender.accepted)
    wait(lambda: sent_count(mta) >= accepted, f"all {accepted} accepted delivered",
         90)
    new_master = g.master(exclude=("a",))
    numbers = pop_numbers(g.pop3[new_master])
    counts = {}
    for n in numbers:
        counts[n] = counts.get(n, 0) + 1
    missing = [n for n in sender.accepted if counts.get(n, 0) == 0]
    twice = [n for n, c in counts.items() if c > 1]
    extra = [n for n in counts if n not in sender.accepted]
    assert not missing, f"accepted with 250 but not in the mailbox: {missing}"
    assert not twice, f"stored twice: {twice}"
    assert not extra, f"stored but never accepted: {extra}"
    log = mta.log()
    assert "status=bounced" not in log, log
    assert "sender notification" not in log and "postmaster copy" not in log, log
    assert "status=deferred" not in log, [l for l in log.splitlines()
                                          if "status=deferred" in l][:5]
    failed_sites = len(re.findall(r"shard=s1 site=\d event=site_failed", log))
    again = len(re.findall(r"status=sent \(250 \S+ <[^>]*> Already delivered", log))
    print(f"failover: kill -9 of the master -> first delivery by the MTA on site "
          f"{new_master} in {failover:.2f} s; {accepted} accepted with 250, "
          f"{len(numbers)} in the mailbox, none lost, none twice, no deferral, "
          f"no bounce ({failed_sites} site failures followed, {again} re-sent "
          f"transactions answered 'Already delivered')")
    for line in re.findall(r".*event=site_failed.*", log)[:4]:
        h.note("MTA: " + line.split(" info: ", 1)[-1])

    # (c) A login through the MMP reaches the new master.
    p = poplib.POP3("127.0.0.1", g.mmp_pop3, timeout=30)
    p.user(USER)
    p.pass_(PW)
    assert p.stat()[0] == len(numbers)
    p.quit()
    mmp.wait_log(r"session end .*user=alice@example\.test shard=s1 result=ok",
                 timeout=10)
    m = imaplib.IMAP4("127.0.0.1", g.mmp_imap, timeout=30)
    m.login(USER, PW)
    typ, data = m.select("INBOX")
    assert typ == "OK" and int(data[0]) == len(numbers), (typ, data)
    m.logout()
    h.note("MMP: POP3 and IMAP logins after the kill reached the new master")
    mta.stop()
    mmp.stop()


if __name__ == "__main__":
    mtharness.main(test)
