#!/usr/bin/env python3
"""test-directory-providers.py -- two slapd providers in multi-provider
delta-syncrepl (`mailtierctl directory up --server-id --peer [--join]`,
dirsvc/README.md "Two providers"), with real slapd processes:

- provider 2 starts from provider 1's copy (--copy-from); both hold
  valid CSNs (server ids 001/002, never slapadd's 000);
- `mailtierctl users add` goes to the first URI of [directory] uris only
  (the entry's CSN carries that provider's id) and reaches the other
  within seconds; an add and a mailHost change made on either provider
  reach the other, and the contextCSNs are equal afterwards;
- provider 1 stopped (SIGSTOP: a host gone without a FIN), then killed
  (SIGKILL), in the middle of uncached libdirsvc lookups and auths, 8 at a
  time (dirsvc-client bench): they run on through provider 2 (stopped:
  none fails, the ones in flight are answered by provider 2 within
  [directory] timeout; killed: at most the 8 in flight may fail, none
  did here); a `users add` while it hangs is made on provider 2 after
  its bind's timeout;
  afterwards single lookups and auths, `users add`, `users passwd` and
  `users set-host` work through provider 2, within [directory] timeout;
- `users set-host` writes mailHost on provider 1 and returns once both
  providers return it (with provider 1 down: once provider 2 does);
- provider 1 restarted catches up (contextCSN equal) and takes the writes
  again;
- three providers: a change on any one reaches the other two.
Prints the replication delays it saw."""

import os
import re
import signal
import subprocess
import time

import mtharness

SUFFIX = "dc=example,dc=test"
PEOPLE = "ou=people," + SUFFIX
ADMIN = "cn=admin," + SUFFIX
WAIT_S = 10.0


def ldap(cmd, uri, pw, *args, input=None):
    argv = [cmd, "-x", "-H", uri, "-D", ADMIN, "-w", pw]
    if cmd == "ldapsearch":
        argv += ["-LLL", "-o", "ldif-wrap=no"]
    return subprocess.run(argv + list(args), capture_output=True, text=True,
                          input=input, timeout=30)


def attr(uri, pw, dn, name):
    """The values of name in the entry dn on uri ([] if it is absent or
    the provider does not answer)."""
    r = ldap("ldapsearch", uri, pw, "-b", dn, "-s", "base", name)
    if r.returncode != 0:
        return []
    return sorted(re.findall(r"^%s: (.*)$" % name, r.stdout, re.M | re.I))


def context_csn(uri, pw):
    return attr(uri, pw, SUFFIX, "contextCSN")


def wait_for(what, fn, timeout=WAIT_S):
    """Poll fn every 50 ms until it is true; the seconds it took."""
    start = time.monotonic()
    while not fn():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.05)
    return time.monotonic() - start


def user_dn(address):
    return f"uid={address},{PEOPLE}"


def csn_sid(uri, pw, address):
    """The server id in the entryCSN of address's entry: which provider
    made its last change."""
    csn = attr(uri, pw, user_dn(address), "entryCSN")
    assert len(csn) == 1, csn
    return csn[0].split("#")[2]


def set_mail_host(uri, pw, address, shard):
    r = ldap("ldapmodify", uri, pw, input=f"dn: {user_dn(address)}\n"
             f"changetype: modify\nreplace: mailHost\nmailHost: {shard}\n")
    assert r.returncode == 0, r


def client(h, conf, *lines):
    """dirsvc-client on conf: one reply line per command."""
    p = subprocess.run([mtharness.binary("tests/integration/dirsvc-client"), conf],
                       input="".join(l + "\n" for l in lines),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p
    replies = p.stdout.splitlines()
    h.note("dirsvc-client: " + " | ".join(replies))
    return replies


def ms(reply):
    return float(re.search(r" ms=([0-9.]+)", reply).group(1))


def test(h):
    ds = h.directory_providers_up(2)
    p1, p2 = ds["providers"]
    conf = ds["conf"]
    pw = open(os.path.join(p1["dir"], "admin.secret")).read()
    timeout_ms = 3000  # [directory] timeout's default (directory.conf sets none)
    delays = {}

    # Provider 2 holds provider 1's copy; no CSN with server id 000.
    wait_for("provider 2 has the base entries",
             lambda: context_csn(p2["uri"], pw) == context_csn(p1["uri"], pw))
    for p in (p1, p2):
        for csn in context_csn(p["uri"], pw):
            assert csn.split("#")[2] != "000", (p["uri"], csn)
        conf_text = open(os.path.join(p["dir"], "slapd.conf")).read()
        assert os.stat(os.path.join(p["dir"], "slapd.conf")).st_mode & 0o077 == 0
        assert "multiprovider on" in conf_text and "syncdata=accesslog" in conf_text

    # users add through [directory] uris = p1 p2: written on provider 1.
    h.ctl("users", "add", "bob@example.test", "--shard", "s1", config=conf,
          input="bobpw\n")
    assert csn_sid(p1["uri"], pw, "bob@example.test") == "001"
    delays["users add p1->p2"] = wait_for(
        "bob on provider 2",
        lambda: attr(p2["uri"], pw, user_dn("bob@example.test"), "mailHost") == ["s1"])

    # With provider 2 first in uris, the add is made on provider 2.
    conf2 = os.path.join(h.tmpdir, "providers-2-first.conf")
    with open(conf) as f:
        text = f.read()
    with open(conf2, "w") as f:
        f.write(text.replace(f"uris = {p1['uri']} {p2['uri']}",
                             f"uris = {p2['uri']} {p1['uri']}"))
    h.ctl("users", "add", "cleo@example.test", "--shard", "s2", config=conf2,
          input="cleopw\n")
    assert csn_sid(p2["uri"], pw, "cleo@example.test") == "002"
    delays["users add p2->p1"] = wait_for(
        "cleo on provider 1",
        lambda: attr(p1["uri"], pw, user_dn("cleo@example.test"), "mailHost") == ["s2"])

    # A mailHost change on either provider reaches the other.
    set_mail_host(p2["uri"], pw, "bob@example.test", "s2")
    delays["mailHost p2->p1"] = wait_for(
        "bob's mailHost s2 on provider 1",
        lambda: attr(p1["uri"], pw, user_dn("bob@example.test"), "mailHost") == ["s2"])
    set_mail_host(p1["uri"], pw, "cleo@example.test", "s1")
    delays["mailHost p1->p2"] = wait_for(
        "cleo's mailHost s1 on provider 2",
        lambda: attr(p2["uri"], pw, user_dn("cleo@example.test"), "mailHost") == ["s1"])
    wait_for("contextCSN equal",
             lambda: context_csn(p1["uri"], pw) == context_csn(p2["uri"], pw))

    # users set-host: written on provider 1, done once both return it.
    start = time.monotonic()
    r = h.ctl("users", "set-host", "bob@example.test", "s1", config=conf)
    delays["users set-host, both providers return it"] = time.monotonic() - start
    assert "(0 of 2 did not)" in r.stdout, r.stdout
    assert csn_sid(p1["uri"], pw, "bob@example.test") == "001"
    for p in (p1, p2):
        assert attr(p["uri"], pw, user_dn("bob@example.test"), "mailHost") == ["s1"]
    r = h.ctl("users", "set-host", "bob@example.test", "nosuch", config=conf, check=False)
    assert r.returncode != 0 and "not in [shards]" in r.stderr, r
    set_mail_host(p1["uri"], pw, "bob@example.test", "s2")

    # Reads through both URIs.
    r = client(h, conf, "lookup bob@example.test", "auth cleo@example.test cleopw")
    assert "status=found" in r[0] and "shard=s2" in r[0], r
    assert "status=ok" in r[1], r

    # Provider 1 killed under load: uncached lookups and auths, 8 at a
    # time, run on while it dies.
    h.ctl("users", "bulk", "--count", 200, "--domain", "example.test",
          "--shards", "s1,s2", config=conf)
    wait_for("bulk users on provider 2",
             lambda: context_csn(p1["uri"], pw) == context_csn(p2["uri"], pw))
    nocache = os.path.join(h.tmpdir, "providers-nocache.conf")
    with open(nocache, "w") as f:
        f.write(text.replace("[directory]\n", "[directory]\ncache_entries = 0\n", 1))
    pid1 = int(open(os.path.join(p1["dir"], "slapd.pid")).read())

    def under_load(what, sig, tolerated):
        load = subprocess.Popen([mtharness.binary("tests/integration/dirsvc-client"),
                                 nocache], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        try:
            load.stdin.write("bench lookup 30000 8 200 example.test\n"
                             "bench auth 3000 8 200 example.test\n")
            load.stdin.flush()
            time.sleep(0.5)
            os.kill(pid1, sig)
            out, _ = load.communicate(timeout=120)
        finally:
            if load.poll() is None:
                load.kill()
        h.note(f"load while provider 1 {what}: " + out)
        print(f"load while provider 1 {what}:\n" + out.strip())
        benches = [dict(re.findall(r"(\w+)=(\S+)", l)) for l in out.splitlines()]
        assert len(benches) == 2, out
        for b in benches:
            assert int(b["fail"]) <= tolerated, out
            assert int(b["ok"]) + int(b["fail"]) == int(b["n"]), out
            assert float(b["maxgap"]) < timeout_ms, out

    # Stopped (SIGSTOP: a host gone without a FIN): requests in flight
    # there time out after their share of [directory] timeout and are
    # answered by provider 2; none fails.
    try:
        under_load("stopped", signal.SIGSTOP, 0)
        # A write while it hangs: the bind times out ([directory] timeout),
        # then provider 2 takes it.
        start = time.monotonic()
        h.ctl("users", "add", "fred@example.test", "--shard", "s1", config=conf,
              input="fredpw\n")
        took = time.monotonic() - start
        print(f"users add with provider 1 stopped: {took:.2f} s")
        assert took < 2 * timeout_ms / 1000, took
        assert csn_sid(p2["uri"], pw, "fred@example.test") == "002"
    finally:
        os.kill(pid1, signal.SIGCONT)
    wait_for("fred on provider 1 after SIGCONT",
             lambda: attr(p1["uri"], pw, user_dn("fred@example.test"), "mailHost") == ["s1"])
    # Killed: requests in flight on its connections may fail (TEMPFAIL:
    # the MTA answers 4xx, the MMP -ERR [SYS/TEMP]), never more than the 8
    # in flight (none did in our runs); the rest go to provider 2.
    under_load("died", signal.SIGKILL, 8)
    wait_for("provider 1 gone", lambda: not os.path.exists(f"/proc/{pid1}"))
    r = client(h, conf, "lookup cleo@example.test", "auth bob@example.test bobpw")
    assert "status=found" in r[0] and "shard=s1" in r[0], r
    assert "status=ok" in r[1], r
    assert ms(r[0]) < timeout_ms and ms(r[1]) < timeout_ms, r
    h.ctl("users", "add", "dora@example.test", "--shard", "s1", config=conf,
          input="dorapw\n")
    assert csn_sid(p2["uri"], pw, "dora@example.test") == "002"
    h.ctl("users", "passwd", "bob@example.test", config=conf, input="bobpw2\n")
    r = h.ctl("users", "set-host", "dora@example.test", "s2", config=conf)
    assert "(1 of 2 did not)" in r.stdout, r.stdout
    assert attr(p2["uri"], pw, user_dn("dora@example.test"), "mailHost") == ["s2"]
    set_mail_host(p2["uri"], pw, "dora@example.test", "s1")
    r = client(h, conf, "auth bob@example.test bobpw2", "auth dora@example.test dorapw")
    assert all("status=ok" in x for x in r), r

    # Provider 1 restarted catches up, and writes go to it again.
    start = time.monotonic()
    h.ctl("directory", "up", "--dir", p1["dir"], "--port", p1["port"],
          "--server-id", 1, "--peer", p2["uri"])
    delays["catch-up after restart"] = time.monotonic() - start + wait_for(
        "provider 1 catches up",
        lambda: attr(p1["uri"], pw, user_dn("dora@example.test"), "mailHost") == ["s1"]
        and context_csn(p1["uri"], pw) == context_csn(p2["uri"], pw))
    h.ctl("users", "add", "emil@example.test", "--shard", "s2", config=conf,
          input="emilpw\n")
    assert csn_sid(p1["uri"], pw, "emil@example.test") == "001"
    delays["users add p1->p2 after restart"] = wait_for(
        "emil on provider 2",
        lambda: attr(p2["uri"], pw, user_dn("emil@example.test"), "mailHost") == ["s2"])
    wait_for("contextCSN equal at the end",
             lambda: context_csn(p1["uri"], pw) == context_csn(p2["uri"], pw))

    for what, s in delays.items():
        print(f"replication: {what}: {s:.2f} s")
    three_providers(h)


def three_providers(h):
    """The optional third provider: a change made on any one reaches the
    other two, contextCSN equal on all three, set-host sees all three."""
    ds = h.directory_providers_up(3, name="trio")
    ps = ds["providers"]
    pw = open(os.path.join(ps[0]["dir"], "admin.secret")).read()
    h.ctl("users", "add", "trio@example.test", "--shard", "s1", config=ds["conf"],
          input="triopw\n")
    for p in ps:
        wait_for("trio on " + p["uri"], lambda: attr(
            p["uri"], pw, user_dn("trio@example.test"), "mailHost") == ["s1"])
    set_mail_host(ps[2]["uri"], pw, "trio@example.test", "s2")
    for p in ps:
        wait_for("trio's mailHost s2 on " + p["uri"], lambda: attr(
            p["uri"], pw, user_dn("trio@example.test"), "mailHost") == ["s2"])
    wait_for("contextCSN equal on three providers",
             lambda: context_csn(ps[0]["uri"], pw) == context_csn(ps[1]["uri"], pw)
             == context_csn(ps[2]["uri"], pw))
    r = h.ctl("users", "set-host", "trio@example.test", "s1", config=ds["conf"])
    assert "(0 of 3 did not)" in r.stdout, r.stdout


if __name__ == "__main__":
    mtharness.main(test)
