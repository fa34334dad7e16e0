"""repl_shard -- one shard as a Berkeley DB replication group of real
mailtier-popstore sites on loopback, for the replication tests and
bench/replication.py (issue #38): free ports per site (LMTP, POP3, IMAP,
replication), a [popstore.SITE] section per site (`shard = NAME`,
replication_listen, replication_sites), the [shards] line listing the
sites (`NAME = SITE | SITE | SITE`), start/stop of a site (the first with
--create-group), and which site serves (the one whose LMTP greets 220).

    repl_shard.require_popstore()                   # else Skip
    shard = repl_shard.Shard(h, ds_dir)            # after h.directory_up()
    conf = shard.write_conf(extra="[mta]\\n...")   # the whole config file
    shard.start_group()     # "a" founds the group, "b" and "c" join it
    m = shard.master()                              # "a"

Trust boundary: test code only."""

import os
import socket
import time

import mtharness


def require_popstore():
    """Skip the test when this build has no mailtier-popstore."""
    try:
        mtharness.binary("popstore/mailtier-popstore")
    except mtharness.HarnessError:
        raise mtharness.Skip("mailtier-popstore is not built")


def greeting(port, host="127.0.0.1", timeout=3.0):
    """The first line a service port sends, or None if it does not answer."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            data = b""
            while b"\r\n" not in data:
                chunk = s.recv(512)
                if not chunk:
                    break
                data += chunk
            return data.decode("utf-8", "replace").split("\r\n")[0]
    except OSError:
        return None


class Shard:
    """The sites of one shard (name) in the directory ds_dir of
    `mailtierctl directory up`; sites ("a",) is a single-site shard."""

    def __init__(self, h, ds_dir, name="s1", sites=("a", "b", "c"), prefix=None):
        self.h, self.dir, self.name, self.sites = h, ds_dir, name, tuple(sites)
        self.prefix = prefix    # section names prefix-a, ...; None: name, name-b
        n = len(self.sites)
        ports = h.free_ports(4 * n)
        self.lmtp = dict(zip(self.sites, ports[0:n]))
        self.pop3 = dict(zip(self.sites, ports[n:2 * n]))
        self.imap = dict(zip(self.sites, ports[2 * n:3 * n]))
        self.repl = dict(zip(self.sites, ports[3 * n:]))
        self.daemons = {}
        self.runs = 0
        self.conf = None

    def section(self, site):
        if self.prefix is not None:
            return f"{self.prefix}-{site}"
        return self.name if site == self.sites[0] else f"{self.name}-{site}"

    def home(self, site):
        return os.path.join(self.dir, f"store-{self.section(site)}")

    def shards_line(self):
        return f"{self.name} = " + " | ".join(
            f"127.0.0.1:{self.lmtp[s]}, 127.0.0.1:{self.pop3[s]}, 127.0.0.1:{self.imap[s]}"
            for s in self.sites)

    def sections(self):
        """The [popstore.SITE] sections."""
        text = ""
        repl_sites = " ".join(f"127.0.0.1:{self.repl[s]}" for s in self.sites)
        for s in self.sites:
            text += (f"\n[popstore.{self.section(s)}]\nshard = {self.name}\n"
                     f"db_home = {self.home(s)}\n"
                     f"lmtp_listen = 127.0.0.1:{self.lmtp[s]}\n"
                     f"pop3_listen = 127.0.0.1:{self.pop3[s]}\n"
                     f"imap_listen = 127.0.0.1:{self.imap[s]}\n")
            if len(self.sites) > 1:
                text += (f"replication_listen = 127.0.0.1:{self.repl[s]}\n"
                         f"replication_sites = {repl_sites}\n")
        return text

    def write_conf(self, popstore="", extra="", file="repl.conf", log_level="info",
                   cache="8M"):
        """The whole config: [directory] from `directory up`, [global],
        [shards], [popstore] (db_cache_size, then popstore's lines), the
        sites' sections, then extra."""
        with open(os.path.join(self.dir, "directory.conf")) as f:
            text = f.read()
        text += (f"\n[global]\nuser =\ngroup =\nlog_level = {log_level}\n"
                 "drain_timeout = 5s\n"
                 f"\n[shards]\n{self.shards_line()}\n"
                 f"\n[popstore]\ndb_cache_size = {cache}\n{popstore}")
        text += self.sections() + extra
        self.conf = os.path.join(self.dir, file)
        with open(self.conf, "w") as f:
            f.write(text)
        return self.conf

    def start(self, site, create=False):
        self.runs += 1
        argv = [mtharness.binary("popstore/mailtier-popstore"), "-c", self.conf,
                "-s", self.section(site), "-f"]
        if create:
            argv.append("--create-group")
        d = self.h.start(f"popstore-{self.section(site)}-{self.runs}", argv)
        self.daemons[site] = d
        return d

    def start_group(self, timeout=30.0):
        """The group's first start: the first site founds it, the others
        join; returns once the first serves and the others refuse naming
        it as master."""
        first = self.sites[0]
        self.start(first, create=True)
        for s in self.sites[1:]:
            self.start(s)
        assert self.master() == first
        hint = f"master is 127.0.0.1:{self.repl[first]}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(hint in (greeting(self.lmtp[s]) or "") for s in self.sites[1:]):
                return
            time.sleep(0.2)
        raise AssertionError("the replicas do not name the master: " + ", ".join(
            f"{s}: {greeting(self.lmtp[s])!r}" for s in self.sites[1:]))

    def messages(self, site, user):
        """`mailtierctl store messages` of user on site: every folder's
        UIDVALIDITY, UIDNEXT, HIGHESTMODSEQ and each message's uid, MODSEQ,
        size, INTERNALDATE, UIDL and flags (the site's daemon running:
        mailtierctl joins its environment); None for a temporary failure
        (a replica still synchronising)."""
        p = self.h.ctl("store", "messages", self.section(site), user, config=self.conf,
                       check=False)
        if p.returncode != 0:
            # A replica still synchronising may answer a temporary failure.
            assert "tempfail" in p.stderr, p.stderr
            return None
        return p.stdout

    def same_on_every_site(self, user, timeout=30.0):
        """Wait (the replicas apply the last commits) until every site
        holds user's mailboxes the same, message by message; returns the
        listing, or raises with the sites' differences."""
        deadline = time.monotonic() + timeout
        while True:
            got = {s: self.messages(s, user) for s in self.sites}
            same = len(set(got.values())) == 1 and None not in got.values()
            if same or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if not same:
            first = (got[self.sites[0]] or "").splitlines()
            diff = {s: sorted(set((v or "").splitlines()) ^ set(first))[:6]
                    for s, v in got.items()}
            raise AssertionError(f"the sites differ for {user}: {diff}")
        return got[self.sites[0]]

    def serving(self, site):
        g = greeting(self.lmtp[site])
        return g is not None and g.startswith("220")

    def master(self, timeout=60.0, exclude=()):
        """The site whose LMTP greets 220."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for s in self.sites:
                if s not in exclude and self.serving(s):
                    return s
            time.sleep(0.05)
        raise AssertionError(f"no master within {timeout:.0f} s: " + ", ".join(
            f"{s}: {greeting(self.lmtp[s])!r}" for s in self.sites))
