#!/usr/bin/env python3
"""test-store-replication.py -- one shard as three real mailtier-popstore
sites in one Berkeley DB replication group (issue #38, HA.md),
on loopback, with a real slapd; the test's LMTP client plays the MTA (it
retries a 4xx or a broken session on the shard's next site with the same
XQUEUEID, as HA.md 5.4 asks of the MTA):

  (a) the first site founds the group (--create-group) and serves; the
      other two join and refuse LMTP, POP3 and IMAP at once, naming the
      master ("421 4.3.2 ... replica, master is HOST:PORT");
  (b) kill -9 of the master under LMTP load: another site is elected and
      serves; every message that got a 250 is in the mailbox exactly once
      (POP3 on the new master), none got a 5xx; the failover time (kill
      -> first 250 from the new master) is printed;
  (c) the killed site's data directory wiped (its host and disk lost): it
      restarts without --create-group, gets a full copy and is a replica;
  (d) the master alone (both replicas stopped): a delivery gets a 4xx,
      never a 250 (no quorum, no acknowledgement), and the site stops
      taking new sessions ("master without a quorum");
  (e) `mailtierctl store stat` on each running site shows the same
      mailboxes, messages and bytes, and `mailtierctl store messages` the
      same folders (UIDVALIDITY, UIDNEXT, HIGHESTMODSEQ) and messages
      (uid, MODSEQ, size, INTERNALDATE, UIDL, flags).

Skipped when mailtier-popstore is not built."""

import poplib
import re
import shutil
import smtplib
import socket
import threading
import time

import mtharness
import repl_shard
from repl_shard import greeting

D = "example.test"
USER = f"alice@{D}"
PW = "pw-repl"
SITES = ("a", "b", "c")


class Shard(repl_shard.Shard):
    def __init__(self, h):
        ds = h.directory_up(shards=("s1",))
        super().__init__(h, ds["dir"])
        self.write_conf(popstore="allow_plaintext_auth = yes\n"
                        "replication_ack_timeout = 1s\n")
        h.ctl("users", "add", USER, "--shard", "s1", config=self.conf,
              input=PW + "\n")


class Deliverer:
    """LMTP deliveries of numbered messages, each retried on the shard's
    sites (4xx, 421 greeting, broken session) with the same XQUEUEID
    until a 250 or the budget; a ledger of the 250s."""

    def __init__(self, shard, budget=60.0):
        self.shard = shard
        self.budget = budget
        self.acked = {}         # n -> (site, monotonic time)
        self.fivexx = []
        self.site = "a"

    def deliver(self, queue_id, body, key=None, timeout=5):
        """One message (bytes) with XQUEUEID=queue_id, tried on the sites in
        turn from the last good one; True at its 250 (recorded under key),
        False at a 5xx (recorded) or when the budget is spent."""
        deadline = time.monotonic() + self.budget
        order = list(SITES)
        i = order.index(self.site)
        while time.monotonic() < deadline:
            site = order[i % 3]
            try:
                lm = smtplib.LMTP("127.0.0.1", self.shard.lmtp[site], timeout=timeout)
                try:
                    lm.ehlo("mta.test")
                    code, msg = lm.mail(f"sender@{D}", [f"XQUEUEID={queue_id}"])
                    if code == 250:
                        code, msg = lm.rcpt(USER)
                    if code == 250:
                        code, msg = lm.data(body)
                    if code == 250:
                        if key is not None:
                            self.acked[key] = (site, time.monotonic())
                        self.site = site
                        return True
                    if code >= 500:
                        self.fivexx.append((queue_id, code, msg))
                        return False
                finally:
                    lm.close()
            except (OSError, smtplib.SMTPException):
                pass
            i += 1
            time.sleep(0.05)
        return False

    def deliver_one(self, n):
        body = (f"From: sender@{D}\r\nTo: {USER}\r\nSubject: repl-{n:06d}\r\n"
                f"Message-ID: <repl-{n}@test>\r\n\r\nmessage {n}\r\n")
        return self.deliver(f"Q{n:06d}", body.encode(), key=n)

    def deliver_big(self, msg):
        return self.deliver("QBIG1", msg, timeout=60)


BIG_SIZE = 45 << 20


def big_message():
    line = b"x" * 998 + b"\r\n"
    head = (f"From: sender@{D}\r\nTo: {USER}\r\nSubject: big-1\r\n"
            f"Message-ID: <big-1@test>\r\n\r\n").encode()
    return head + line * ((BIG_SIZE - len(head)) // len(line))


def stream_and_kill(shard, site):
    """Start the big delivery to site over a raw socket; kill -9 site's
    daemon once half of it is sent. The message, for the retry."""
    msg = big_message()
    s = socket.create_connection(("127.0.0.1", shard.lmtp[site]), timeout=10)
    f = s.makefile("rb")

    def reply():
        while True:
            line = f.readline()
            if not line or line[3:4] != b"-":
                return line

    assert reply().startswith(b"220")
    for cmd in (b"LHLO mta.test", f"MAIL FROM:<sender@{D}> XQUEUEID=QBIG1".encode(),
                f"RCPT TO:<{USER}>".encode(), b"DATA"):
        s.sendall(cmd + b"\r\n")
        r = reply()
        assert r[:1] in (b"2", b"3"), (cmd, r)
    half = len(msg) // 2
    s.sendall(msg[:half])
    shard.daemons[site].kill()
    try:
        s.sendall(msg[half:] + b".\r\n")
    except OSError:
        pass
    s.close()
    return msg


def pop_sizes(shard, site, subject_prefix):
    p = poplib.POP3("127.0.0.1", shard.pop3[site], timeout=60)
    p.user(USER)
    p.pass_(PW)
    sizes = []
    n = p.stat()[0]
    for i in range(n):
        head = p.top(i + 1, 0)[1]
        if any(line.startswith(subject_prefix) for line in head):
            sizes.append(int(p.list(i + 1).split()[2]))
    p.quit()
    return sizes


def store_stat_full(h, shard, site):
    out = h.ctl("store", "stat", shard.section(site), config=shard.conf).stdout
    return dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)


def pop_subjects(shard, site):
    p = poplib.POP3("127.0.0.1", shard.pop3[site], timeout=15)
    p.user(USER)
    p.pass_(PW)
    n = p.stat()[0]
    subjects = []
    for i in range(n):
        for line in p.top(i + 1, 0)[1]:
            m = re.match(rb"Subject: repl-(\d+)", line)
            if m:
                subjects.append(int(m.group(1)))
    p.quit()
    return subjects


def check_exactly_once(shard, d, site, allowed=()):
    subjects = pop_subjects(shard, site)
    counts = {}
    for s in subjects:
        counts[s] = counts.get(s, 0) + 1
    missing = [n for n in d.acked if counts.get(n, 0) == 0]
    twice = [n for n, c in counts.items() if c > 1]
    assert not missing, f"acknowledged but missing on {site}: {missing}"
    assert not twice, f"stored twice on {site}: {twice}"
    extra = [n for n in counts if n not in d.acked and n not in allowed]
    assert not extra, f"never attempted yet stored: {extra}"
    return len(subjects)


def store_stat(h, shard, site):
    """The site's mailboxes, messages and bytes; None while mailtierctl
    answers a temporary failure (a replica still synchronising: its pages
    can be missing under a reader until it has caught up)."""
    p = h.ctl("store", "stat", shard.section(site), config=shard.conf, check=False)
    if p.returncode != 0:
        assert "tempfail" in p.stderr, p.stderr
        return None
    vals = dict(line.split(": ", 1) for line in p.stdout.splitlines() if ": " in line)
    return {k: vals[k] for k in ("mailboxes", "messages", "bytes")}


def test(h):
    repl_shard.require_popstore()
    shard = Shard(h)

    # (a) found, join, refuse.
    shard.start_group()
    for s in ("b", "c"):
        lmtp, pop3, imap = (greeting(shard.lmtp[s]), greeting(shard.pop3[s]),
                            greeting(shard.imap[s]))
        want = f"replica, master is 127.0.0.1:{shard.repl['a']}"
        assert lmtp.startswith("421 4.3.2 ") and want in lmtp, lmtp
        assert pop3.startswith("-ERR [SYS/TEMP] ") and want in pop3, pop3
        assert imap.startswith("* BYE [UNAVAILABLE] ") and want in imap, imap
    h.note("replicas refuse with the master's address: " + lmtp)

    d = Deliverer(shard)
    for n in range(20):
        assert d.deliver_one(n), f"message {n} not delivered"
    assert {site for site, _ in d.acked.values()} == {"a"}

    # (b) kill -9 of the master under load.
    stop = threading.Event()
    state = {"next": 20}

    def load():
        while not stop.is_set() and state["next"] < 400:
            d.deliver_one(state["next"])
            state["next"] += 1

    t = threading.Thread(target=load)
    t.start()
    while len(d.acked) < 60 and t.is_alive():
        time.sleep(0.05)
    killed_at = time.monotonic()
    shard.daemons["a"].kill()
    h.note(f"killed the master (site a) after {len(d.acked)} acknowledged")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(
            site != "a" and at > killed_at for site, at in d.acked.values()):
        time.sleep(0.05)
    after = [at for site, at in d.acked.values() if site != "a" and at > killed_at]
    assert after, "no delivery on another site within 60 s of the master's loss"
    failover = min(after) - killed_at
    while len([1 for site, _ in d.acked.values() if site != "a"]) < 40 and t.is_alive():
        time.sleep(0.05)
    stop.set()
    t.join(120)
    assert not t.is_alive()
    assert not d.fivexx, f"5xx answers: {d.fivexx[:5]}"
    new_master = shard.master(exclude=("a",))
    attempted = set(range(state["next"]))
    n = check_exactly_once(shard, d, new_master, allowed=attempted)
    print(f"failover: kill -9 of the master -> first LMTP 250 on site {new_master} "
          f"in {failover:.2f} s; {len(d.acked)} acknowledged, {n} stored, none twice, "
          f"none lost")

    # (c) the lost host's disk: wiped, rejoins by a full copy.
    shutil.rmtree(shard.home("a"))
    shard.start("a")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        g = greeting(shard.lmtp["a"])
        if g and "replica, master is" in g:
            break
        time.sleep(0.2)
    assert g and f"master is 127.0.0.1:{shard.repl[new_master]}" in g, g
    shard.daemons["a"].wait_log(r"full copy|internal init", timeout=30)
    for k in range(400, 410):
        assert d.deliver_one(k), f"message {k} not delivered after the rejoin"

    # (c2) the master lost during a 45 MiB streamed delivery: the client
    # sends it again (same XQUEUEID) to the new master, which stores it
    # once; the half-written body the old master's chunk commits left on
    # the replicas is swept when a site becomes master.
    big_master = shard.master()
    big = stream_and_kill(shard, big_master)
    retry = Deliverer(shard, budget=120)
    retry.site = next(s for s in SITES if s != big_master)
    assert retry.deliver_big(big), "the 45 MiB message was not delivered after the kill"
    new_master = retry.site
    sizes = pop_sizes(shard, new_master, b"Subject: big-")
    assert len(sizes) == 1 and abs(sizes[0] - len(big)) < 1024, (sizes, len(big))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        st = store_stat_full(h, shard, new_master)
        if st["partial_bodies"] == "0":
            break
        time.sleep(0.5)
    assert st["partial_bodies"] == "0", st
    h.note(f"45 MiB delivery: master {big_master} killed mid-stream, stored once on "
           f"{new_master}; partial bodies swept")
    shard.start(big_master)

    # (d) the master alone: no acknowledgement, no 250.
    others = [s for s in SITES if s != new_master]
    for s in others:
        shard.daemons[s].stop()
    alone = Deliverer(shard, budget=3.0)
    alone.site = new_master
    t0 = time.monotonic()
    ok = alone.deliver_one(500)
    assert not ok and not alone.acked, "a 250 from a master without its replicas"
    assert not alone.fivexx, alone.fivexx
    h.note(f"master alone: no 250 within {time.monotonic() - t0:.1f} s")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        g = greeting(shard.lmtp[new_master])
        if g and "without a quorum" in g:
            break
        time.sleep(0.2)
    assert g and g.startswith("421 4.3.2") and "master without a quorum" in g, g

    # (e) the same data on every site.
    for s in others:
        shard.start(s)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not shard.serving(new_master):
        time.sleep(0.2)
    assert shard.serving(new_master)
    # Message 500 may have committed on the master alone (its PERM_FAILED
    # answer was a 4xx): it is kept or rolled back, never acknowledged.
    check_exactly_once(shard, d, new_master, allowed=attempted | {500})
    # Read while the sites run (mailtierctl joins a running site's
    # environment and its shared cache; it refuses one whose daemon is
    # gone, as its open would run recovery without replication).
    deadline = time.monotonic() + 20
    while True:
        stats = {s: store_stat(h, shard, s) for s in SITES}
        if (stats["a"] == stats["b"] == stats["c"] and stats["a"] is not None) or \
                time.monotonic() > deadline:
            break
        time.sleep(0.5)     # the replicas apply the last commits
    h.note(f"store stat per site: {stats}")
    assert stats["a"] == stats["b"] == stats["c"] and stats["a"] is not None, stats
    listing = shard.same_on_every_site(USER)
    h.note(f"every site holds {USER}'s mailbox the same, message by message: "
           + listing.splitlines()[0])
    for s in SITES:
        shard.daemons[s].stop()


if __name__ == "__main__":
    mtharness.main(test)
