#!/usr/bin/env python3
"""test-dirsvc.py — libdirsvc against real OpenLDAP slapd instances.

Starts two slapd instances on free 127.0.0.1 ports in a temporary
directory, configured and loaded with dirsvc's own code (mt-provision-gen:
slapd-config.c, provision.c, pwhash.c), and drives the library through
tests/integration/dirsvc-client (a libevent loop reading commands). Checks:
lookups (user, alias, case, unknown, disabled, forwarding, broken entries,
ambiguous addresses, injection attempts, overlong and non-UTF-8 input),
authentication by hash and by bind ({CRYPT}, {SSHA512}, {SSHA}; good, bad,
disabled, uid, a changed password against the cache), failover (first URI
dead, first URI hanging), slapd killed and restarted (reconnects by
itself), slapd SIGSTOPped (TEMPFAIL within the timeout while the caller's
loop keeps running), the stats line, and that no password reaches the log.

  test-dirsvc.py            the test (exit 0 pass, 1 fail, 77 no slapd)
  test-dirsvc.py --bench [USERS]
                            uncached lookups/s and auths/s at 1 and 16
                            concurrent requests, and cached lookups/s
                            through the whole API; medians of 3 runs

Environment: MT_BUILDDIR (dirsvc/mt-provision-gen,
tests/integration/dirsvc-client), MT_SRCDIR (dirsvc/mailtier.schema);
MT_PROVISION_GEN and MT_DIRSVC_CLIENT override the two programs;
MT_KEEP_TMP=1 keeps the temporary directory; MT_DAEMON_WRAPPER runs
dirsvc-client under a tool, e.g. "valgrind -q --error-exitcode=3
--leak-check=full" (its errors fail the test; time limits get more slack).
"""
import base64
import hashlib
import os
import re
import select
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

SKIP, HARD_ERROR = 77, 99
SRC = os.environ.get("MT_SRCDIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("MT_BUILDDIR") or SRC
GEN = os.environ.get("MT_PROVISION_GEN") or os.path.join(
    BUILD, "dirsvc", "mt-provision-gen")
CLIENT = os.environ.get("MT_DIRSVC_CLIENT") or os.path.join(
    BUILD, "tests", "integration", "dirsvc-client")
DOMAIN = "example.test"
SUFFIX = "dc=example,dc=test"
PEOPLE = "ou=people," + SUFFIX
TIMEOUT_MS = 1000
SLACK_MS = 250          # scheduling slack on a loaded 2-core machine
GAP_MS = 100            # the longest the caller's loop may stall
WRAPPER = shlex.split(os.environ.get("MT_DAEMON_WRAPPER", ""))
if WRAPPER:
    SLACK_MS, GAP_MS = 1500, 1000

failures = []


def check(cond, what):
    if cond:
        print("ok   " + what)
    else:
        print("FAIL " + what)
        failures.append(what)
    return cond


def find_program(name):
    return shutil.which(name) or next(
        (p for p in ("/usr/sbin/" + name, "/usr/local/sbin/" + name)
         if os.access(p, os.X_OK)), None)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(args, stdin=None):
    return subprocess.run(args, input=stdin, capture_output=True, text=True,
                          check=True).stdout


def pw_hash(scheme, password, rounds=None):
    if scheme == "ssha":        # pwhash.c verifies but does not write it
        salt = os.urandom(8)
        digest = hashlib.sha1(password.encode() + salt).digest()
        return "{SSHA}" + base64.b64encode(digest + salt).decode()
    args = [GEN, "hash", "--scheme", scheme]
    if rounds:
        args += ["--rounds", str(rounds)]
    return run(args, password + "\n").strip()


def entry(mail, host="store1", aliases=(), forward=None, status="active",
          quota=None, password=None, uid=None):
    uid = uid or mail
    lines = ["dn: uid=%s,%s" % (uid, PEOPLE), "objectClass: inetOrgPerson",
             "objectClass: inetLocalMailRecipient",
             "objectClass: mailtierAccount", "uid: " + uid,
             "cn: " + uid, "sn: " + uid, "mail: " + mail]
    lines += ["mailLocalAddress: " + a for a in aliases]
    if host:
        lines.append("mailHost: " + host)
    if forward:
        lines.append("mailRoutingAddress: " + forward)
    if status:
        lines.append("mailtierStatus: " + status)
    if quota:
        lines.append("mailtierQuota: %d" % quota)
    if password:
        lines.append("userPassword: " + password)
    return "\n".join(lines) + "\n\n"


def test_entries():
    crypt = lambda pw: pw_hash("crypt", pw, 1000)
    return "".join([
        entry("alice@example.test", aliases=["a.smith@example.test",
                                             "postmaster@example.test"],
              quota=1048576, password=crypt("alice-pw")),
        entry("bob@example.test", host="store2",
              forward="bob@elsewhere.test",
              password=pw_hash("ssha512", "bob-pw")),
        entry("carol@example.test", status="disabled",
              password=crypt("carol-pw")),
        entry("dave@example.test", status="hold", password=crypt("dave-pw")),
        entry("erin@example.test", uid="erin",
              password=pw_hash("ssha", "erin-pw")),
        entry("nohost@example.test", host=None, password=crypt("nohost-pw")),
        entry("badshard@example.test", host="store9",
              password=crypt("badshard-pw")),
        entry("dup1@example.test", aliases=["shared@example.test"]),
        entry("dup2@example.test", aliases=["shared@example.test"]),
    ])


class Slapd:
    """One slapd in tmp/NAME, configured by dirsvc's slapd-config.c."""

    def __init__(self, tmp, name, ldif):
        self.dir = os.path.join(tmp, name)
        self.port = free_port()
        self.tmp = tmp
        self.proc = None
        out = run([GEN, "slapd-config", "--dir", self.dir, "--port",
                   str(self.port), "--domain", DOMAIN, "--schema",
                   os.path.join(SRC, "dirsvc", "mailtier.schema"),
                   "--admin-pw-file", os.path.join(tmp, "admin.pw"),
                   "--service-pw-file", os.path.join(tmp, "service.pw"),
                   "--auth-method", "hash"])
        self.info = dict(line.split("=", 1) for line in out.splitlines())
        self.conf = os.path.join(self.dir, "slapd.conf")
        data = os.path.join(self.dir, "all.ldif")
        with open(data, "w") as f:
            with open(os.path.join(self.dir, "base.ldif")) as base:
                f.write(base.read())
            f.write(ldif)
        subprocess.run(["slapadd", "-q", "-f", self.conf, "-l", data],
                       check=True)
        self.uri = "ldap://127.0.0.1:%d/" % self.port

    def start(self):
        log = open(os.path.join(self.dir, "slapd.log"), "a")
        self.proc = subprocess.Popen(
            [SLAPD, "-d", "0", "-f", self.conf, "-h", self.info["urls"]],
            stdout=log, stderr=log)
        deadline = time.time() + 15
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("slapd %s exited: see %s/slapd.log" %
                                   (self.dir, self.dir))
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("slapd %s did not start" % self.dir)

    def kill(self, sig=signal.SIGKILL):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            os.kill(self.proc.pid, sig)
            self.proc.wait(10)
        self.proc = None

    def signal(self, sig):
        os.kill(self.proc.pid, sig)

    def modify(self, ldif):
        subprocess.run(["ldapmodify", "-x", "-H", self.uri, "-D",
                        self.info["admin_dn"], "-y",
                        os.path.join(self.tmp, "admin.pw")],
                       input=ldif, text=True, check=True,
                       capture_output=True)


class Client:
    """dirsvc-client on a config; one command, one reply line."""

    def __init__(self, tmp, name, uris, auth="hash", cache_entries=100000,
                 pool_size=4, cache_ttl="60s", timeout_ms=TIMEOUT_MS):
        self.conf = os.path.join(tmp, name + ".conf")
        self.log = os.path.join(tmp, name + ".log")
        with open(self.conf, "w") as f:
            f.write("""[directory]
uris = %s
base_dn = %s
bind_dn = cn=mailtier-service,%s
bind_password_file = %s
timeout = %dms
pool_size = %d
cache_ttl = %s
negative_cache_ttl = 10s
cache_entries = %d
auth_method = %s
[shards]
store1 = 127.0.0.1:2401, 127.0.0.1:1101
store2 = 127.0.0.1:2402, 127.0.0.1:1102
[mta]
local_domains = example.test
""" % (" ".join(uris), PEOPLE, SUFFIX, os.path.join(tmp, "service.pw"),
                timeout_ms, pool_size, cache_ttl, cache_entries, auth))
        self.proc = subprocess.Popen(WRAPPER + [CLIENT, self.conf],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=open(self.log, "w"), text=True,
                                     bufsize=1)

    def cmd(self, line, wait=30):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], wait)
        if not ready:
            raise RuntimeError("no reply to %r in %d s" % (line, wait))
        reply = self.proc.stdout.readline()
        if not reply:
            raise RuntimeError("dirsvc-client died on %r (see %s)" %
                               (line, self.log))
        fields = {"_": reply.split(" ", 1)[0]}
        for m in re.finditer(r'(\w+)=("([^"]*)"|\S+)', reply):
            fields[m.group(1)] = m.group(3) if m.group(3) is not None \
                else m.group(2)
        fields["line"] = reply.strip()
        return fields

    def close(self):
        self.proc.stdin.close()
        rc = self.proc.wait(30)
        check(rc == 0, "dirsvc-client %s exits cleanly (rc %d)" %
              (os.path.basename(self.conf), rc))
        with open(self.log) as f:
            return f.read()


def hexarg(b):
    return "hex:" + b.hex()


def lookups(c):
    r = c.cmd("lookup alice@example.test")
    check(r["status"] == "found" and r["address"] == "alice@example.test"
          and r["shard"] == "store1" and r["quota"] == "1048576"
          and r["account"] == "active" and "forward" not in r,
          "lookup user: " + r["line"])
    r = c.cmd("lookup Alice@Example.TEST")
    check(r["status"] == "found" and r["cached"] == "1",
          "lookup is case-insensitive and cached: " + r["line"])
    r = c.cmd("lookup a.smith@example.test")
    check(r["status"] == "found" and r["address"] == "alice@example.test",
          "lookup alias gives the canonical address: " + r["line"])
    r = c.cmd("lookup bob@example.test")
    check(r["status"] == "found" and r["shard"] == "store2"
          and r.get("forward") == "bob@elsewhere.test",
          "lookup with forwarding: " + r["line"])
    r = c.cmd("lookup carol@example.test")
    check(r["status"] == "found" and r["account"] == "disabled",
          "lookup disabled account: " + r["line"])
    r = c.cmd("lookup dave@example.test")
    check(r["status"] == "found" and r["account"] == "hold",
          "lookup held account: " + r["line"])
    r = c.cmd("lookup nobody@example.test")
    check(r["status"] == "not_found" and r["cached"] == "0",
          "lookup unknown: " + r["line"])
    r = c.cmd("lookup nobody@example.test")
    check(r["status"] == "not_found" and r["cached"] == "1",
          "lookup unknown again: negative cache: " + r["line"])
    for addr in ("nohost@example.test", "badshard@example.test"):
        r = c.cmd("lookup " + addr)
        check(r["status"] == "tempfail", "lookup %s: %s" % (addr, r["line"]))
    r = c.cmd("lookup shared@example.test")
    check(r["status"] == "tempfail",
          "lookup of an address in two entries: " + r["line"])
    # Injection: each must stay one assertion value and match nothing.
    for attack in ("*", "a*)(uid=*", "*)(|(mail=*", "alice@example.test)(mail=*",
                   "alice@example.test)(|(objectClass=*)",
                   "\\2a", "*@example.test", "alice*"):
        r = c.cmd("lookup " + hexarg(attack.encode()))
        check(r["status"] == "not_found",
              "injection %r: %s" % (attack, r["line"]))
    r = c.cmd("lookup " + hexarg("j\u00fcrgen@example.test".encode()))
    check(r["status"] == "not_found", "UTF-8 address: " + r["line"])
    r = c.cmd("lookup " + "a" * 242 + "@example.test")      # 255 octets
    check(r["status"] == "invalid" and "too long" in r["reason"],
          "255-octet address refused: " + r["line"])
    r = c.cmd("lookup " + "a" * 241 + "@example.test")      # 254 octets
    check(r["status"] == "not_found", "254-octet address asked: " + r["line"])
    for bad in (b"\xff@example.test", b"\xc0\xafx@example.test",
                b"\xed\xa0\x80@example.test", b"a\x01b@example.test"):
        r = c.cmd("lookup " + hexarg(bad))
        check(r["status"] == "invalid", "bad input %r: %s" % (bad, r["line"]))


def auths(c, method):
    t = "auth(%s) " % method
    r = c.cmd("auth alice@example.test alice-pw")
    check(r["status"] == "ok" and r["address"] == "alice@example.test"
          and r["shard"] == "store1" and r["cached"] == "0",
          t + "good {CRYPT} password: " + r["line"])
    r = c.cmd("auth alice@example.test alice-pw")
    check(r["status"] == "ok" and r["cached"] == "1",
          t + "again, from the cache: " + r["line"])
    r = c.cmd("auth alice@example.test alice-pwx")
    check(r["status"] == "bad_credentials" and r["cached"] == "0",
          t + "wrong password is not taken from the cache: " + r["line"])
    r = c.cmd("auth a.smith@example.test alice-pw")
    check(r["status"] == "bad_credentials", t + "aliases do not log in: " +
          r["line"])
    r = c.cmd("auth bob@example.test bob-pw")
    check(r["status"] == "ok" and r["shard"] == "store2",
          t + "good {SSHA512} password: " + r["line"])
    r = c.cmd("auth erin erin-pw")
    check(r["status"] == "ok" and r["address"] == "erin@example.test",
          t + "login by uid, {SSHA}: " + r["line"])
    r = c.cmd("auth erin@example.test erin-pw")
    check(r["status"] == "ok", t + "login by mail: " + r["line"])
    r = c.cmd("auth nobody@example.test x")
    check(r["status"] == "bad_credentials", t + "unknown user: " + r["line"])
    r = c.cmd("auth carol@example.test carol-pw")
    check(r["status"] == "disabled" and r["account"] == "disabled",
          t + "disabled account, right password: " + r["line"])
    r = c.cmd("auth carol@example.test wrong")
    check(r["status"] == "bad_credentials",
          t + "disabled account, wrong password says nothing: " + r["line"])
    r = c.cmd("auth dave@example.test dave-pw")
    check(r["status"] == "disabled", t + "held account: " + r["line"])
    r = c.cmd("auth nohost@example.test nohost-pw")
    check(r["status"] == "tempfail", t + "entry without mailHost: " + r["line"])
    r = c.cmd("auth alice@example.test hex:")
    check(r["status"] == "bad_credentials", t + "empty password: " + r["line"])
    for attack in ("*", "alice@example.test)(uid=*", "*)(|(uid=*"):
        r = c.cmd("auth %s alice-pw" % hexarg(attack.encode()))
        check(r["status"] == "bad_credentials",
              t + "injection %r: %s" % (attack, r["line"]))


def changed_password(c, slapd, method):
    t = "auth(%s) " % method
    r = c.cmd("auth dave2@example.test old-pw")
    check(r["status"] == "ok", t + "before the change: " + r["line"])
    r = c.cmd("auth dave2@example.test old-pw")
    check(r["cached"] == "1", t + "cached: " + r["line"])
    slapd.modify("dn: uid=dave2@example.test,%s\nchangetype: modify\n"
                 "replace: userPassword\nuserPassword: %s\n" %
                 (PEOPLE, pw_hash("crypt", "new-pw", 1000)))
    r = c.cmd("auth dave2@example.test new-pw")
    check(r["status"] == "ok" and r["cached"] == "0",
          t + "new password at once, from the directory: " + r["line"])
    r = c.cmd("auth dave2@example.test old-pw")
    check(r["status"] == "bad_credentials",
          t + "old password no longer accepted: " + r["line"])
    slapd.modify("dn: uid=dave2@example.test,%s\nchangetype: modify\n"
                 "replace: userPassword\nuserPassword: %s\n" %
                 (PEOPLE, pw_hash("crypt", "old-pw", 1000)))


def wait_found(c, addr, seconds):
    deadline = time.time() + seconds
    while True:
        r = c.cmd("lookup " + addr)
        if r["status"] == "found" or time.time() > deadline:
            return r
        time.sleep(0.2)


def within_timeout(r):
    return float(r["ms"]) <= TIMEOUT_MS + SLACK_MS


def loop_free(r):
    return float(r["maxgap"]) < GAP_MS


def failover(tmp, s1, s2):
    dead = "ldap://127.0.0.1:%d/" % free_port()
    c = Client(tmp, "failover", [dead, s2.uri])
    r = c.cmd("lookup alice@example.test")
    check(r["status"] == "found" and within_timeout(r),
          "failover: first URI refuses, second answers: " + r["line"])
    r = c.cmd("auth bob@example.test bob-pw")
    check(r["status"] == "ok", "failover: auth: " + r["line"])
    c.close()

    # First URI hangs (stopped): its share of the time runs out, the
    # second answers within the same request's timeout.
    c = Client(tmp, "failover-hang", [s1.uri, s2.uri], cache_entries=0)
    s1.signal(signal.SIGSTOP)
    try:
        r = c.cmd("lookup alice@example.test")
        check(r["status"] == "found" and within_timeout(r) and loop_free(r),
              "failover: first URI hangs, second answers in time: " +
              r["line"])
        r = c.cmd("lookup bob@example.test")
        # Trying the hung URI again would cost its share of the timeout
        # (half of it with two URIs); skipped, the lookup takes far less.
        # (GAP_MS was the bound once: a loaded machine takes longer.)
        check(r["status"] == "found" and float(r["ms"]) < TIMEOUT_MS / 2,
              "failover: the hung URI is skipped afterwards: " + r["line"])
    finally:
        s1.signal(signal.SIGCONT)
    c.close()


def restart(tmp, s1):
    c = Client(tmp, "restart", [s1.uri], cache_entries=0)
    r = c.cmd("lookup alice@example.test")
    check(r["status"] == "found", "restart: before: " + r["line"])
    s1.kill()
    r = c.cmd("lookup alice@example.test")
    check(r["status"] == "tempfail" and within_timeout(r) and loop_free(r),
          "restart: slapd down: TEMPFAIL in time: " + r["line"])
    r = c.cmd("multi 8 bob@example.test")
    check(r["tempfail"] == "8" and float(r["slowest_ms"]) <=
          TIMEOUT_MS + SLACK_MS, "restart: slapd down, 8 at once: " +
          r["line"])
    s1.start()
    r = wait_found(c, "alice@example.test", 5)
    check(r["status"] == "found", "restart: reconnects by itself: " +
          r["line"])
    # A restart while connections are kept: retried invisibly.
    s1.kill(signal.SIGTERM)
    s1.start()
    r = c.cmd("lookup bob@example.test")
    check(r["status"] == "found",
          "restart: kept connections re-made without a TEMPFAIL: " +
          r["line"])
    c.close()


def stopped(tmp, s1):
    c = Client(tmp, "sigstop", [s1.uri], cache_entries=0)
    r = c.cmd("lookup alice@example.test")
    check(r["status"] == "found", "sigstop: before: " + r["line"])
    s1.signal(signal.SIGSTOP)
    try:
        r = c.cmd("lookup alice@example.test")
        check(r["status"] == "tempfail" and within_timeout(r),
              "sigstop: TEMPFAIL within the timeout: " + r["line"])
        check(loop_free(r), "sigstop: the caller's loop kept running: " +
              r["line"])
        r = c.cmd("multi 20 bob@example.test")
        check(r["tempfail"] == "20" and float(r["slowest_ms"]) <=
              TIMEOUT_MS + SLACK_MS and loop_free(r),
              "sigstop: 20 at once (5 per connection): " + r["line"])
        time.sleep(1.1)     # past the retry pause: connect again, hang again
        r = c.cmd("auth alice@example.test alice-pw")
        check(r["status"] == "tempfail" and within_timeout(r),
              "sigstop: auth TEMPFAIL within the timeout: " + r["line"])
    finally:
        s1.signal(signal.SIGCONT)
    r = wait_found(c, "alice@example.test", 5)
    check(r["status"] == "found", "sigstop: recovers after SIGCONT: " +
          r["line"])
    c.cmd("stats")
    log = c.close()
    check("dirsvc stats: cache=off" in log and "timeouts=" in log,
          "stats line logged")


def threads(tmp, s1):
    """Several loops in several threads share one struct mt_dirsvc: its
    pool, its cache; cancelled requests never call back; a client freed
    with requests outstanding is safe."""
    # A long timeout: 1,800 requests at once (under valgrind too).
    c = Client(tmp, "threads", [s1.uri], cache_entries=300, timeout_ms=60000)
    r = c.cmd("threads 6 300 100 " + DOMAIN, wait=120)
    # Per thread: 200 kept, at least 100 answers are waited for (a batch
    # of completions may carry a few more).
    check(600 <= int(r["answered"]) <= 1200 and r["found"] == r["answered"]
          and r["cancelled_called"] == "0", "6 loops in 6 threads: " +
          r["line"])
    r = c.cmd("lookup user7@" + DOMAIN)
    check(r["status"] == "found", "after the threads: " + r["line"])
    c.close()


def test(tmp):
    bulk = subprocess.run([GEN, "users", "--domain", DOMAIN, "--count", "100",
                           "--shards", "store1,store2"], capture_output=True,
                          text=True, check=True).stdout
    s1 = Slapd(tmp, "s1", test_entries() + bulk + entry(
        "dave2@example.test", password=pw_hash("crypt", "old-pw", 1000)))
    s2 = Slapd(tmp, "s2", test_entries())
    s1.start()
    s2.start()
    logs = []
    try:
        c = Client(tmp, "hash", [s1.uri], auth="hash")
        lookups(c)
        auths(c, "hash")
        changed_password(c, s1, "hash")
        c.cmd("stats")
        logs.append(c.close())
        check("dirsvc stats: cache_entries=" in logs[-1] and
              "cache_hits=" in logs[-1], "stats line logged")
        for dn_part in ("uid=nohost@example.test", "uid=badshard@example.test"):
            check(re.search(r"error: session=\w+ dirsvc: entry dn=%s,%s: " %
                            (re.escape(dn_part), PEOPLE), logs[-1]) is not None,
                  "broken entry logged with its DN: " + dn_part)

        c = Client(tmp, "bind", [s1.uri], auth="bind")
        auths(c, "bind")
        changed_password(c, s1, "bind")
        logs.append(c.close())

        threads(tmp, s1)
        failover(tmp, s1, s2)
        restart(tmp, s1)
        stopped(tmp, s1)
    finally:
        s1.kill()
        s2.kill()
    for name in os.listdir(tmp):
        if name.endswith(".log") and not name.startswith("slapd"):
            with open(os.path.join(tmp, name)) as f:
                text = f.read()
            for pw in ("alice-pw", "bob-pw", "carol-pw", "erin-pw", "old-pw",
                       "new-pw", "servicepw"):
                check(pw not in text, "%s: no password %s in the log" %
                      (name, pw))


def bench(tmp, users):
    """Uncached lookups/s and auths/s (hash, bind) at 1 and 16 concurrent
    requests, and cached lookups/s; medians of 3."""
    gen = subprocess.run([GEN, "users", "--domain", DOMAIN, "--count",
                          str(users), "--shards", "store1,store2"],
                         capture_output=True, text=True, check=True).stdout
    s1 = Slapd(tmp, "s1", gen)
    s1.start()
    results = []
    try:
        for auth in ("hash", "bind"):
            c = Client(tmp, "bench-" + auth, [s1.uri], auth=auth,
                       cache_entries=0, pool_size=int(
                           os.environ.get("POOL", "4")))
            c.cmd("lookup user1@%s" % DOMAIN)   # connect first
            kinds = ("lookup", "auth") if auth == "hash" else ("auth",)
            for kind in kinds:
                for conc in (1, 16):
                    n = 5000 if conc == 1 else 20000
                    rates = []
                    for _ in range(3):
                        r = c.cmd("bench %s %d %d %d %s" %
                                  (kind, n, conc, users, DOMAIN), wait=600)
                        if r["fail"] != "0":
                            print("bench failures: " + r["line"])
                        rates.append(float(r["per_sec"]))
                    results.append(("%s(%s)" % (kind, auth) if kind == "auth"
                                    else kind, conc, rates))
            c.close()
        c = Client(tmp, "bench-cached", [s1.uri], cache_entries=users * 2)
        c.cmd("bench lookup %d 16 %d %s" % (users, users, DOMAIN), wait=600)
        for conc in (1, 16):
            rates = [float(c.cmd("bench lookup 1000000 %d %d %s" %
                                 (conc, users, DOMAIN), wait=600)["per_sec"])
                     for _ in range(3)]
            results.append(("cached lookup", conc, rates))
        c.close()
    finally:
        s1.kill()
    print("dirsvc bench: users=%d pool_size=%s nproc=%d timeout=%dms" %
          (users, os.environ.get("POOL", "4"), os.cpu_count(), TIMEOUT_MS))
    for kind, conc, rates in results:
        print("RESULT %-14s concurrency=%-2d median=%8.0f/s  runs=%s" %
              (kind, conc, statistics.median(rates),
               " ".join("%.0f" % x for x in rates)))


def main():
    global SLAPD
    SLAPD = find_program("slapd")
    if not SLAPD or not find_program("slapadd") or not shutil.which(
            "ldapmodify"):
        print("SKIP: slapd, slapadd or ldapmodify not installed")
        return SKIP
    for prog in (GEN, CLIENT):
        if not os.access(prog, os.X_OK):
            print("ERROR: %s is not built" % prog)
            return HARD_ERROR
    tmp = tempfile.mkdtemp(prefix="mt-dirsvc-test.")
    # No line end: ldapmodify -y takes the whole file as the password.
    with open(os.path.join(tmp, "admin.pw"), "w") as f:
        f.write("adminpw")
    with open(os.path.join(tmp, "service.pw"), "w") as f:
        f.write("servicepw")
    try:
        if len(sys.argv) > 1 and sys.argv[1] == "--bench":
            bench(tmp, int(sys.argv[2]) if len(sys.argv) > 2 else 10000)
            return 0
        test(tmp)
    finally:
        if os.environ.get("MT_KEEP_TMP") == "1":
            print("kept " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("PASS: dirsvc")
    return 0


if __name__ == "__main__":
    sys.exit(main())
