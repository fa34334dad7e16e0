#!/usr/bin/env python3
"""test-multihost.py -- the cluster as six hosts on one machine: network
namespaces ldap, store1, store2, mta, mmp and gen (the client host), each
with one veth into a Linux bridge that lives in a seventh namespace the test
creates, addresses in 10.213.0.0/24. Nothing touches the machine's own
interfaces or routes; the subnet exists only inside these namespaces, so
parallel runs (namespace names carry the pid) do not clash.

Each daemon runs inside its host's namespace (`ip netns exec`) on that
host's address, with standard ports: slapd (`mailtierctl directory up
--address`) on ldap:389, mailtier-popstore -s store1/-s store2 on the store
hosts (LMTP 24, POP3 110; LMTP only from the MTA's address, proxy logins
only from the MMP's), mailtier-mta on mta:25, mailtier-mmp on mmp:110.
Readiness is sd-notify READY=1 (the harness's NOTIFY_SOCKET is a path, the
same in every network namespace).

Checked, with smtplib and poplib from the gen host:
  - mail for a user on each shard crosses the hosts (gen -> MTA -> LMTP to
    the store host) and is fetched through the MMP with STLS, byte-exact;
  - with store2's link down, a store2 user logging in through the MMP gets
    -ERR [SYS/TEMP] within backend_connect_timeout while a store1 user is
    served; mail for the store2 user is accepted (250) and deferred;
  - with the link back up, `mailtierctl queue flush` delivers it, and it is
    fetched through the MMP.

Skipped (77) when not root, when `ip netns add` fails, or without slapd.
Everything (daemons, slapd, namespaces) is torn down at the end, pass or
fail. MT_KEEP_TMP=1 keeps the logs, MT_VERBOSE=1 prints progress.

Trust boundary: test code only."""

import os
import poplib
import re
import signal
import smtplib
import ssl
import subprocess
import time

import mtharness
import netns

DOMAIN = "example.test"
SUBNET = "10.213.0.0/24"
HOSTS = {               # namespace role -> its address on the bridge
    "ldap": "10.213.0.10",
    "store1": "10.213.0.11",
    "store2": "10.213.0.12",
    "mta": "10.213.0.20",
    "mmp": "10.213.0.30",
    "gen": "10.213.0.40",
}
LDAP_PORT, LMTP_PORT, POP3_PORT, SMTP_PORT, POP3S_PORT = 389, 24, 110, 25, 995
BACKEND_CONNECT_TIMEOUT = 1.0   # [mmp] backend_connect_timeout, seconds
USERS = {"alice@example.test": ("alice-pw", "store1"),
         "bob@example.test": ("bob-pw", "store2")}
PROXY_PASSWORD = "multihost-proxy-secret"
NS_TAG = "mtmh"         # namespaces are mtmh<pid>-<role>

class Cluster:
    def __init__(self, h, net):
        self.h = h
        self.net = net
        self.dir = os.path.join(h.tmpdir, "cluster")
        os.makedirs(self.dir)
        self.conf = os.path.join(self.dir, "mailtier.conf")
        self.env = dict(os.environ,
                        MAILTIER_DATADIR=os.environ.get("MT_SRCDIR", ""))
        # MT_DAEMON_WRAPPER goes after `ip netns exec NS`, not before it.
        self.wrapper = os.environ.pop("MT_DAEMON_WRAPPER", "").split()

    def ctl(self, role, *args, input=None, config=True, check=True):
        """mailtierctl run on host role."""
        argv = self.net.exec_argv(role) + [mtharness.binary("ctl/mailtierctl")]
        if config:
            argv += ["-c", self.conf]
        argv += [str(a) for a in args]
        p = subprocess.run(argv, input=input, capture_output=True, text=True,
                           timeout=120, env=self.env)
        self.h.note(f"{' '.join(argv)} -> {p.returncode}")
        if check and p.returncode != 0:
            raise mtharness.HarnessError(f"{' '.join(argv)} exited "
                                         f"{p.returncode}:\n{p.stdout}{p.stderr}")
        return p

    def directory_up(self):
        self.ldap_dir = os.path.join(self.dir, "ldap")
        self.h.add_cleanup(lambda: self.ctl("ldap", "directory", "down", "--dir",
                                            self.ldap_dir, config=False,
                                            check=False))
        p = self.ctl("ldap", "directory", "up", "--dir", self.ldap_dir,
                     "--port", LDAP_PORT, "--address", HOSTS["ldap"],
                     "--domain", DOMAIN, config=False)
        assert f"ldap://{HOSTS['ldap']}:{LDAP_PORT}/" in p.stdout, p.stdout

    def make_cert(self):
        self.cert = os.path.join(self.dir, "cert.pem")
        self.key = os.path.join(self.dir, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec",
                        "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-keyout", self.key, "-out", self.cert, "-days", "2",
                        "-subj", "/CN=mmp.example.test", "-addext",
                        f"subjectAltName=DNS:mmp.example.test,IP:{HOSTS['mmp']}"],
                       check=True, capture_output=True, timeout=60)

    def write_conf(self):
        with open(os.path.join(self.ldap_dir, "directory.conf")) as f:
            directory = f.read().split("\n[mta]")[0]   # [directory] only
        assert f"uris = ldap://{HOSTS['ldap']}:{LDAP_PORT}/" in directory
        self.secret = os.path.join(self.dir, "proxy.secret")
        with open(self.secret, "w") as f:
            f.write(PROXY_PASSWORD + "\n")
        os.chmod(self.secret, 0o600)
        stores = ("store1", "store2")
        text = ["[global]", "user =", "group =", "log_level = info",
                "drain_timeout = 5s", "", directory.strip(), "", "[shards]"]
        text += [f"{s} = {HOSTS[s]}:{LMTP_PORT}, {HOSTS[s]}:{POP3_PORT}"
                 for s in stores]
        text += ["", "[tls]", f"cert_file = {self.cert}", f"key_file = {self.key}",
                 "", "[mta]",
                 f"smtp_listen = {HOSTS['mta']}:{SMTP_PORT}",
                 "submission_listen =", "submissions_listen =",
                 "hostname = mta.example.test", f"local_domains = {DOMAIN}",
                 f"mynetworks = {SUBNET}",
                 f"queue_dir = {os.path.join(self.dir, 'queue')}",
                 # Only `queue flush` retries within the test's time.
                 "retry_schedule = 10m", "max_queue_lifetime = 1h",
                 "connect_timeout = 2s", "client_timeout = 10s",
                 # No cached LMTP connection across the link going down.
                 "connection_cache_time = 0",
                 "command_timeout = 20s", "data_timeout = 20s",
                 "", "[mmp]",
                 f"pop3_listen = {HOSTS['mmp']}:{POP3_PORT}",
                 f"pop3s_listen = {HOSTS['mmp']}:{POP3S_PORT}",
                 "threads = 2", f"proxy_password_file = {self.secret}",
                 f"backend_connect_timeout = {int(BACKEND_CONNECT_TIMEOUT * 1000)}ms",
                 "shard_retry_interval = 1s", "auth_fail_delay = 100ms",
                 "login_timeout = 30s", "stats_interval = 0",
                 "", "[popstore]", f"proxy_password_file = {self.secret}",
                 "db_cache_size = 8M", "stats_interval = 0",
                 f"lmtp_clients = {HOSTS['mta']}/32",
                 f"proxy_addresses = {HOSTS['mmp']}/32"]
        for s in stores:
            text += ["", f"[popstore.{s}]",
                     f"db_home = {os.path.join(self.dir, 'db-' + s)}",
                     f"lmtp_listen = {HOSTS[s]}:{LMTP_PORT}",
                     f"pop3_listen = {HOSTS[s]}:{POP3_PORT}",
                     f"hostname = {s}.example.test"]
            os.makedirs(os.path.join(self.dir, "db-" + s))
        with open(self.conf, "w") as f:
            f.write("\n".join(text) + "\n")
        p = self.ctl("gen", "config", "check")
        assert p.stdout.strip() == "ok", p.stdout + p.stderr

    def start(self, role, name, argv):
        return self.h.start(name, self.net.exec_argv(role) + self.wrapper + argv,
                            ready_timeout=60)

    def start_daemons(self):
        popstore = mtharness.binary("popstore/mailtier-popstore")
        self.stores = {s: self.start(s, f"popstore-{s}",
                                     [popstore, "-c", self.conf, "-s", s, "-F"])
                       for s in ("store1", "store2")}
        self.mta = self.start("mta", "mta", [mtharness.binary("mta/mailtier-mta"),
                                             "-f", "-c", self.conf])
        self.mmp = self.start("mmp", "mmp", [mtharness.binary("mmp/mailtier-mmp"),
                                             "-c", self.conf, "-f"])

    # Clients, from the gen host

    def send(self, to, subject, body):
        """Send one message to the MTA over SMTP; returns (bytes sent as
        the body, Message-ID). Any refusal raises."""
        msgid = f"<{time.time_ns()}.{subject.replace(' ', '-')}@gen.example.test>"
        headers = (f"From: <sender@remote.test>\r\nTo: <{to}>\r\n"
                   f"Subject: {subject}\r\nMessage-ID: {msgid}\r\n")
        message = (headers + "\r\n").encode() + body
        with self.net.inside("gen"):
            with smtplib.SMTP(HOSTS["mta"], SMTP_PORT, local_hostname="gen.example.test",
                              timeout=20) as s:
                s.ehlo("gen.example.test")
                s.mail("sender@remote.test")
                code, text = s.rcpt(to)
                assert code == 250, (code, text)
                code, text = s.data(message)
                assert code == 250, (code, text)    # durable in the queue
        return body, msgid

    def pop(self, user, password=None):
        """Log in through the MMP (STLS); a poplib.POP3 or the error."""
        password = password if password is not None else USERS[user][0]
        ctx = ssl.create_default_context(cafile=self.cert)
        with self.net.inside("gen"):
            p = poplib.POP3(HOSTS["mmp"], POP3_PORT, timeout=15)
        try:
            p.stls(context=ctx)
            p.user(user)
            p.pass_(password)
        except Exception:
            p.close()
            raise
        return p

    def fetch_all(self, user):
        """Every message in user's mailbox as a list of raw bytes."""
        p = self.pop(user)
        try:
            count, _ = p.stat()
            out = []
            for i in range(1, count + 1):
                _, lines, _ = p.retr(i)
                out.append(b"".join(line + b"\r\n" for line in lines))
            p.quit()
            return out
        finally:
            p.close()


def body_of(raw):
    return raw.split(b"\r\n\r\n", 1)[1]


def find_message(messages, msgid):
    for raw in messages:
        head = raw.split(b"\r\n\r\n", 1)[0]
        if f"Message-ID: {msgid}".encode() in head.split(b"\r\n"):
            return raw
    raise AssertionError(f"no message {msgid} among {len(messages)}")


def body(tag):
    """A body with what transports get wrong: lines starting with dots
    (stuffed on the wire, RFC 5321 section 4.5.2), a long line, trailing
    blanks, an empty line, UTF-8."""
    return (f"Hello from the gen host ({tag}).\r\n"
            ".a line that starts with a dot\r\n"
            "..two dots\r\n"
            + "x" * 900 + "\r\n"
            "trailing blanks   \r\n"
            "\r\n"
            "caf\u00e9 \u2014 end\r\n").encode("utf-8")


def wait_delivery(mta, to, status, timeout, since=0):
    """The MTA's log line for to= with status= (sent, deferred), after
    offset since in the log. Returns (line, end offset)."""
    pattern = re.compile(rf"^.*to=<{re.escape(to)}>.*status={status}\b.*$", re.M)
    deadline = time.monotonic() + timeout
    while True:
        m = pattern.search(mta.log(), since)
        if m:
            return m.group(0), m.end()
        if time.monotonic() > deadline:
            raise mtharness.HarnessError(f"mta: no status={status} for {to} "
                                         f"within {timeout:.0f} s")
        time.sleep(0.05)


def test(h):
    t0 = time.monotonic()
    net = netns.setup(h, {role: {"lan": addr} for role, addr in HOSTS.items()}, NS_TAG)
    h.note(f"network up in {time.monotonic() - t0:.1f} s")

    c = Cluster(h, net)
    c.directory_up()
    c.make_cert()
    c.write_conf()
    for user, (password, shard) in USERS.items():
        c.ctl("gen", "users", "add", user, "--shard", shard, input=password + "\n")
    c.start_daemons()
    h.note(f"cluster up in {time.monotonic() - t0:.1f} s")

    # 1. Mail for a user on each shard crosses the hosts.
    sent = {}
    for user, (_, shard) in USERS.items():
        sent[user] = [c.send(user, f"to {shard}", body(f"first, {shard}"))]
    for user, (_, shard) in USERS.items():
        line, _ = wait_delivery(c.mta, user, "sent", 20)
        assert f" relay={shard}[{HOSTS[shard]}:{LMTP_PORT}] " in line, line
    # Each store saw LMTP from the MTA's host and, below, proxy logins from
    # the MMP's host: the traffic crossed the bridge.
    for d in c.stores.values():
        d.wait_log(rf"lmtp connect peer={re.escape(HOSTS['mta'])}:\d+$", 5)
    for user, (_, shard) in USERS.items():
        got = c.fetch_all(user)
        assert len(got) == 1, (user, got)
        text, msgid = sent[user][0]
        raw = find_message(got, msgid)
        assert body_of(raw) == text, (user, body_of(raw), text)
        # Received: lines name the hosts it crossed.
        assert HOSTS["gen"].encode() in raw.split(b"\r\n\r\n", 1)[0], raw[:600]
        c.stores[shard].wait_log(
            rf"pop3 connect peer={re.escape(HOSTS['mmp'])}:\d+ proxy=yes", 5)
    h.note(f"delivered across hosts at {time.monotonic() - t0:.1f} s")

    # 2. store2's cable is pulled.
    offset = len(c.mta.log())
    net.link("store2", "down")
    start = time.monotonic()
    try:
        p = c.pop("bob@example.test")
        p.close()
        raise AssertionError("bob logged in with store2 unreachable")
    except poplib.error_proto as e:
        took = time.monotonic() - start
        assert str(e).startswith("b'-ERR [SYS/TEMP]"), e
    # The client's whole login (STLS, USER, directory lookup, PASS) is
    # measured; the shard's share is at most backend_connect_timeout.
    assert took < BACKEND_CONNECT_TIMEOUT + 2.0, f"-ERR after {took:.2f} s"
    h.note(f"store2 down: -ERR [SYS/TEMP] after {took:.2f} s")

    got = c.fetch_all("alice@example.test")   # store1 is served normally
    assert len(got) == 1 and body_of(got[0]) == sent["alice@example.test"][0][0]

    # A store2 user's mail is accepted meanwhile (250) and deferred.
    deferred = c.send("bob@example.test", "while down", body("deferred"))
    sent["bob@example.test"].append(deferred)
    line, offset = wait_delivery(c.mta, "bob@example.test", "deferred", 20, offset)
    h.note(f"deferred: {line}")
    # Meanwhile mail to store1 still goes through.
    more = c.send("alice@example.test", "while store2 down", body("store1 fine"))
    sent["alice@example.test"].append(more)
    wait_delivery(c.mta, "alice@example.test", "sent", 20, offset)

    # 3. The cable is back: a flush delivers the deferred message.
    net.link("store2", "up")
    for attempt in range(5):
        c.ctl("gen", "queue", "flush")
        try:
            wait_delivery(c.mta, "bob@example.test", "sent", 6, offset)
            h.note(f"flush {attempt + 1} delivered at {time.monotonic() - t0:.1f} s")
            break
        except mtharness.HarnessError:
            if attempt == 4:
                raise
    # The MMP marked store2 down for shard_retry_interval; then it probes.
    deadline = time.monotonic() + 15
    while True:
        try:
            got = c.fetch_all("bob@example.test")
            break
        except poplib.error_proto as e:
            if not str(e).startswith("b'-ERR [SYS/TEMP]") or time.monotonic() > deadline:
                raise
            time.sleep(0.3)
    h.note(f"store2 served again at {time.monotonic() - t0:.1f} s")
    assert len(got) == 2, got
    for text, msgid in sent["bob@example.test"]:
        assert body_of(find_message(got, msgid)) == text
    got = c.fetch_all("alice@example.test")
    assert len(got) == 2, got
    for text, msgid in sent["alice@example.test"]:
        assert body_of(find_message(got, msgid)) == text

    # A clean stop of every daemon (the harness kills what is left).
    for d in [c.mmp, c.mta] + list(c.stores.values()):
        d.stop()
    h.note(f"done in {time.monotonic() - t0:.1f} s")


def _terminate(signum, frame):
    # make check's timeout or ^C: unwind so the cleanups run.
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _terminate)
    mtharness.main(test)
