#!/usr/bin/env python3
"""test-store-partition.py -- a replicated shard split by a partition
(issue #38, HA.md 5.6 scenario d): three mailtier-popstore
sites s1a, s1b, s1c, each a host (network namespace) on two networks, the
service network (LMTP and POP3 from the client host gen, LDAP) and the
replication network; a real slapd on host ldap. Built on netns.py.

  1. s1a founds the group (--create-group) and serves; s1b and s1c join;
     messages delivered from gen are answered 250 by s1a;
  2. s1a's replication cable is pulled (link down at the bridge: no FIN,
     silence): s1a stays reachable from gen but cannot reach its replicas.
     A delivery to it is never answered 250 (its batch gets no
     acknowledgement: 451, or 421 once it sees it has no quorum), and
     neither is the retry of that message with the same XQUEUEID (the
     trap of HA.md 5.2: "already delivered" of a copy only its disk has);
  3. s1b and s1c elect a new master, which answers 250 (the test's client
     tries the sites in turn, as the MTA does); the message s1a refused is
     delivered there;
  4. the cable is plugged back: the old master is demoted and exits 75;
     the test restarts every site that exits (as systemd would) until the
     group has one master again, and no site's Berkeley DB panics;
  5. every message answered 250, before, during and after the partition,
     is in the mailbox exactly once (POP3 from gen on the master).

Skipped (77) when not root, when `ip netns add` fails, or without slapd.
Everything is torn down at the end, pass or fail.

Trust boundary: test code only."""

import os
import poplib
import re
import smtplib
import socket
import subprocess
import time

import mtharness
import netns

DOMAIN = "example.test"
USER, PW = f"alice@{DOMAIN}", "alice-pw"
NS_TAG = "mtsp"
SITES = ("s1a", "s1b", "s1c")
HOSTS = {
    "ldap": {"svc": "10.213.0.10"},
    "s1a": {"svc": "10.213.0.11", "repl": "10.214.0.11"},
    "s1b": {"svc": "10.213.0.12", "repl": "10.214.0.12"},
    "s1c": {"svc": "10.213.0.13", "repl": "10.214.0.13"},
    "gen": {"svc": "10.213.0.40"},
}
LDAP_PORT, LMTP_PORT, POP3_PORT, REPL_PORT = 389, 24, 110, 7400


class Shard:
    def __init__(self, h, net):
        self.h, self.net = h, net
        self.dir = os.path.join(h.tmpdir, "cluster")
        os.makedirs(self.dir)
        self.conf = os.path.join(self.dir, "mailtier.conf")
        self.env = dict(os.environ, MAILTIER_DATADIR=os.environ.get("MT_SRCDIR", ""))
        self.daemons, self.runs = {}, 0
        self.exits = []

    def ctl(self, role, *args, input=None, config=True):
        argv = self.net.exec_argv(role) + [mtharness.binary("ctl/mailtierctl")]
        if config:
            argv += ["-c", self.conf]
        argv += [str(a) for a in args]
        p = subprocess.run(argv, input=input, capture_output=True, text=True,
                           timeout=120, env=self.env)
        if p.returncode != 0:
            raise mtharness.HarnessError(f"{' '.join(argv)}: {p.stdout}{p.stderr}")
        return p

    def setup(self):
        ldap_dir = os.path.join(self.dir, "ldap")
        self.h.add_cleanup(lambda: subprocess.run(
            self.net.exec_argv("ldap") + [mtharness.binary("ctl/mailtierctl"),
                                          "directory", "down", "--dir", ldap_dir],
            capture_output=True, timeout=60))
        self.ctl("ldap", "directory", "up", "--dir", ldap_dir, "--port", LDAP_PORT,
                 "--address", HOSTS["ldap"]["svc"], "--domain", DOMAIN, config=False)
        with open(os.path.join(ldap_dir, "directory.conf")) as f:
            directory = f.read().split("\n[mta]")[0]
        sites = " ".join(f"{HOSTS[s]['repl']}:{REPL_PORT}" for s in SITES)
        text = ["[global]", "user =", "group =", "log_level = info",
                "drain_timeout = 5s", "", directory.strip(), "", "[shards]",
                "s1 = " + " | ".join(f"{HOSTS[s]['svc']}:{LMTP_PORT}, "
                                     f"{HOSTS[s]['svc']}:{POP3_PORT}" for s in SITES),
                "", "[mta]", f"local_domains = {DOMAIN}",
                f"queue_dir = {os.path.join(self.dir, 'queue')}",
                "", "[popstore]", "db_cache_size = 8M", "stats_interval = 0",
                "allow_plaintext_auth = yes", "replication_ack_timeout = 1s",
                f"lmtp_clients = {HOSTS['gen']['svc']}/32"]
        for s in SITES:
            text += ["", f"[popstore.{s}]", "shard = s1",
                     f"db_home = {os.path.join(self.dir, 'db-' + s)}",
                     f"lmtp_listen = {HOSTS[s]['svc']}:{LMTP_PORT}",
                     f"pop3_listen = {HOSTS[s]['svc']}:{POP3_PORT}",
                     f"hostname = {s}.example.test",
                     f"replication_listen = {HOSTS[s]['repl']}:{REPL_PORT}",
                     f"replication_sites = {sites}"]
        with open(self.conf, "w") as f:
            f.write("\n".join(text) + "\n")
        self.ctl("gen", "users", "add", USER, "--shard", "s1", input=PW + "\n")

    def start(self, site, create=False):
        self.runs += 1
        argv = self.net.exec_argv(site) + [
            mtharness.binary("popstore/mailtier-popstore"), "-c", self.conf,
            "-s", site, "-F"] + (["--create-group"] if create else [])
        self.daemons[site] = self.h.start(f"{site}-{self.runs}", argv, ready_timeout=90)

    def greeting(self, site):
        try:
            with self.net.inside("gen"):
                s = socket.create_connection((HOSTS[site]["svc"], LMTP_PORT), timeout=3)
            with s:
                s.settimeout(3)
                return s.recv(512).decode("utf-8", "replace").split("\r\n")[0]
        except OSError:
            return None

    def master(self, timeout=60, restart=False):
        """The site greeting 220; with restart, sites that exited start
        again (as systemd's Restart=on-failure would)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if restart:
                self.restart_exited()
            for s in SITES:
                g = self.greeting(s)
                if g and g.startswith("220"):
                    return s
            time.sleep(0.2)
        raise AssertionError("no master: " + ", ".join(
            f"{s}: {self.greeting(s)!r}" for s in SITES))

    def deliver(self, site, n):
        """One LMTP delivery of message n to site, from gen: the reply code
        to DATA (or to RCPT/MAIL if they refused), 0 if the site did not
        answer."""
        try:
            with self.net.inside("gen"):
                lm = smtplib.LMTP(HOSTS[site]["svc"], LMTP_PORT, timeout=10)
            try:
                lm.ehlo("gen.example.test")
                code, _ = lm.mail(f"sender@{DOMAIN}", [f"XQUEUEID=P{n:05d}"])
                if code != 250:
                    return code
                code, _ = lm.rcpt(USER)
                if code != 250:
                    return code
                code, _ = lm.data(f"Subject: part-{n:05d}\r\n\r\nmessage {n}\r\n".encode())
                return code
            finally:
                lm.close()
        except smtplib.SMTPResponseException as e:
            return e.smtp_code
        except (OSError, smtplib.SMTPException):
            return 0

    def restart_exited(self):
        """Start again every site whose daemon exited (75 after a demotion,
        1 after a Berkeley DB panic), as systemd's Restart=on-failure
        would; the restarts are counted."""
        for s in SITES:
            d = self.daemons.get(s)
            if d is not None and not d.running():
                self.h.note(f"{s} exited {d.proc.returncode}: restarting it")
                self.exits.append((s, d.proc.returncode))
                self.start(s)

    def deliver_any(self, n, acked, budget=60, restart=False):
        """Try the sites in turn until a 250 (recorded in acked)."""
        deadline = time.monotonic() + budget
        while time.monotonic() < deadline:
            if restart:
                self.restart_exited()
            for s in SITES:
                code = self.deliver(s, n)
                assert code < 500 or code == 0, f"message {n}: {code} from {s}"
                if code == 250:
                    acked[n] = s
                    return s
            time.sleep(0.2)
        raise AssertionError(f"message {n} not delivered within {budget} s")

    def subjects(self, site):
        with self.net.inside("gen"):
            p = poplib.POP3(HOSTS[site]["svc"], POP3_PORT, timeout=15)
        p.user(USER)
        p.pass_(PW)
        out = []
        for i in range(p.stat()[0]):
            for line in p.top(i + 1, 0)[1]:
                m = re.match(rb"Subject: part-(\d+)", line)
                if m:
                    out.append(int(m.group(1)))
        p.quit()
        return out


def test(h):
    net = netns.setup(h, HOSTS, NS_TAG)
    shard = Shard(h, net)
    shard.setup()

    # 1. Found, join, serve.
    shard.start("s1a", create=True)
    shard.start("s1b")
    shard.start("s1c")
    assert shard.master() == "s1a"
    time.sleep(1)       # the replicas' first sync
    acked = {}
    for n in range(20):
        shard.deliver_any(n, acked)
    assert set(acked.values()) == {"s1a"}, acked

    # 2. Partition: s1a alone on the replication network, reachable by gen.
    net.link("s1a", "down", "repl")
    t_cut = time.monotonic()
    refused = []
    for n in (100, 101):
        for attempt in range(2):    # the retry of the same XQUEUEID too
            code = shard.deliver("s1a", n)
            h.note(f"isolated s1a, message {n} attempt {attempt + 1}: {code}")
            assert code != 250, f"the isolated master answered 250 to message {n}"
            assert code < 500, f"message {n}: {code}"
            refused.append(code)

    # 3. The majority side elects and serves.
    new = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        new = next((s for s in ("s1b", "s1c")
                    if (shard.greeting(s) or "").startswith("220")), None)
        if new:
            break
        time.sleep(0.2)
    assert new, "no master on the majority side within 60 s"
    print(f"partition: s1a cut off; {new} master {time.monotonic() - t_cut:.1f} s "
          f"after the cut; s1a answered {refused} (never 250)")
    for n in (100, 101):
        shard.deliver_any(n, acked)
    for n in range(200, 230):
        shard.deliver_any(n, acked)
    assert all(acked[n] != "s1a" for n in list(range(200, 230)) + [100, 101]), acked

    # 4. Heal: the old master steps down and rejoins.
    net.link("s1a", "up", "repl")
    old = shard.daemons["s1a"]
    deadline = time.monotonic() + 60
    while old.running() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not old.running(), "the old master still runs 60 s after the heal"
    assert old.proc.returncode == 75, f"the old master exited {old.proc.returncode}"
    master = shard.master(timeout=90, restart=True)
    for n in range(300, 310):
        shard.deliver_any(n, acked, budget=120, restart=True)
    master = shard.master(timeout=30, restart=True)

    # 5. Every 250 once.
    subjects = shard.subjects(master)
    counts = {}
    for s in subjects:
        counts[s] = counts.get(s, 0) + 1
    missing = sorted(n for n in acked if counts.get(n, 0) == 0)
    twice = sorted(n for n, c in counts.items() if c > 1)
    assert not missing, f"acknowledged but missing: {missing}"
    assert not twice, f"stored twice: {twice}"
    print(f"after the heal: master {master}; {len(acked)} acknowledged, "
          f"{len(subjects)} stored, none lost, none twice; sites that exited and "
          f"were restarted: {shard.exits or 'none besides the old master'}")
    # 6. The group whole again: every site answers (the master 220, the
    # others as replicas naming it), a site that exited restarted as
    # systemd would; and no site's Berkeley DB panicked on the way (a
    # demoted master that closed its databases as a client once left file
    # ids in the log that the old master's rollback, and a replica's
    # apply, then failed on at every restart).
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        shard.restart_exited()
        g = {s: shard.greeting(s) or "" for s in SITES}
        if all(x.startswith("220") or "replica, master is" in x for x in g.values()):
            break
        time.sleep(0.5)
    assert all(x.startswith("220") or "replica, master is" in x for x in g.values()), g
    panics = []
    for name in sorted(os.listdir(h.tmpdir)):
        if name.startswith("s1") and name.endswith(".log"):
            with open(os.path.join(h.tmpdir, name), errors="replace") as f:
                panics += [f"{name}: {line.strip()}" for line in f if "PANIC" in line]
    assert not panics, "Berkeley DB panicked:\n" + "\n".join(panics[:10])
    print(f"the group whole again: {g}; restarts: {shard.exits}")


if __name__ == "__main__":
    mtharness.main(test)
