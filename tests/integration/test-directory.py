#!/usr/bin/env python3
"""test-directory.py -- `mailtierctl directory up/down` and `users ...`
against a real slapd: the local slapd answers only on 127.0.0.1, hides
passwords from anonymous clients, survives a second `up`; accounts are
added (SHA-512 crypt), shown by address or alias, re-passworded, deleted;
bulk accounts load offline (slapadd, slapd stopped) and online (LDAP adds
through libdirsvc's admin API), land on the shard the rendezvous hash picks,
and bind with secretK."""

import os
import socket
import subprocess
import sys

import mtharness


def ldap(cmd, uri, *args, dn=None, pw=None):
    argv = [cmd, "-x", "-H", uri] + (["-o", "ldif-wrap=no"] if cmd == "ldapsearch" else [])
    if dn is not None:
        argv += ["-D", dn, "-w", pw]
    return subprocess.run(argv + list(args), capture_output=True, text=True,
                          timeout=30)


def test(h):
    ds = h.directory_up()
    conf, uri, d = ds["conf"], ds["uri"], ds["dir"]
    suffix = "dc=example,dc=test"
    service = open(os.path.join(d, "service.secret")).read()
    admin = open(os.path.join(d, "admin.secret")).read()

    # Bound to 127.0.0.1 only: the port does not answer on another local
    # address of the loopback net.
    with socket.socket() as s:
        s.settimeout(2)
        assert s.connect_ex(("127.0.0.2", ds["port"])) != 0, "slapd listens beyond 127.0.0.1"

    # A second `up` leaves the running slapd alone.
    p = h.ctl("directory", "up", "--dir", d, "--port", ds["port"])
    assert "already running" in p.stdout, p.stdout

    # Single accounts.
    h.ctl("users", "add", "Alice@Example.TEST", "--alias", "al@example.test",
          "--quota", "100M", "--shard", "s2", config=conf, input="hunter2\n")
    p = h.ctl("users", "show", "al@example.test", config=conf)
    for line in ("uid: alice@example.test", "mail: alice@example.test",
                 "mailLocalAddress: al@example.test", "mailHost: s2",
                 "mailtierQuota: 104857600", "mailtierStatus: active"):
        assert line in p.stdout, (line, p.stdout)
    assert "userPassword" not in p.stdout
    alice = f"uid=alice@example.test,ou=people,{suffix}"
    assert ldap("ldapwhoami", uri, dn=alice, pw="hunter2").returncode == 0
    assert ldap("ldapwhoami", uri, dn=alice, pw="wrong").returncode != 0

    # The stored hash is SHA-512 crypt; only the service DN (hash mode)
    # and the admin read it; anonymous and users read nothing.
    r = ldap("ldapsearch", uri, "-LLL", "-b", alice, "userPassword",
             dn=f"cn=mailtier-service,{suffix}", pw=service)
    assert r.returncode == 0 and "userPassword:: " in r.stdout, r
    import base64
    value = r.stdout.split("userPassword:: ")[1].split("\n")[0]
    assert base64.b64decode(value).startswith(b"{CRYPT}$6$"), value
    r = ldap("ldapsearch", uri, "-LLL", "-b", alice, "userPassword")
    assert "userPassword" not in r.stdout, r.stdout
    r = ldap("ldapsearch", uri, "-LLL", "-b", alice, "mail", dn=alice, pw="hunter2")
    assert "mail:" not in r.stdout, r.stdout

    h.ctl("users", "passwd", "alice@example.test", config=conf, input="n3w\n")
    assert ldap("ldapwhoami", uri, dn=alice, pw="n3w").returncode == 0
    assert ldap("ldapwhoami", uri, dn=alice, pw="hunter2").returncode != 0

    # Duplicate add fails; bad input is refused with a reason.
    p = h.ctl("users", "add", "alice@example.test", config=conf,
              input="x\n", check=False)
    assert p.returncode == 1, p
    p = h.ctl("users", "add", "a*)(uid=*@example.test", config=conf,
              input="x\n", check=False)
    assert p.returncode != 0 and p.stderr, p
    p = h.ctl("users", "add", "bob@example.test", "--shard", "nope",
              config=conf, input="x\n", check=False)
    assert p.returncode == 1 and "not listed in [shards]" in p.stderr, p

    h.ctl("users", "del", "alice@example.test", config=conf)
    p = h.ctl("users", "show", "alice@example.test", config=conf, check=False)
    assert p.returncode == 1 and "no such user" in p.stderr, p

    # Bulk, offline: slapd stopped, slapadd -q.
    h.ctl("directory", "down", "--dir", d)
    p = h.ctl("users", "bulk", "--count", "500", config=conf)
    assert "offline, slapadd" in p.stdout, p.stdout
    h.ctl("directory", "up", "--dir", d, "--port", ds["port"])
    # Bulk, online: LDAP adds through libdirsvc's admin API.
    p = h.ctl("users", "bulk", "--count", "100", "--first", "501", config=conf)
    assert "online, LDAP adds" in p.stdout, p.stdout

    seen = {}
    for k in (1, 250, 500, 501, 600):
        p = h.ctl("users", "show", f"user{k}@example.test", config=conf)
        shard = [l.split(": ")[1] for l in p.stdout.splitlines()
                 if l.startswith("mailHost: ")][0]
        seen[k] = shard
        dn = f"uid=user{k}@example.test,ou=people,{suffix}"
        assert ldap("ldapwhoami", uri, dn=dn, pw=f"secret{k}").returncode == 0, k
    # The shard is the rendezvous hash's choice (pinned values).
    gen = h.binary("dirsvc/mt-provision-gen")
    for k, shard in seen.items():
        p = subprocess.run([gen, "shard", "--shards", "s1,s2",
                            f"user{k}@example.test"], capture_output=True,
                           text=True, timeout=10)
        assert shard in p.stdout, (k, shard, p.stdout)
    assert set(seen.values()) == {"s1", "s2"}, seen

    # Count the loaded accounts.
    r = ldap("ldapsearch", uri, "-LLL", "-b", f"ou=people,{suffix}",
             "-z", "0", "(mail=*)", "dn", dn=f"cn=admin,{suffix}", pw=admin)
    assert r.stdout.count("dn: ") == 600, r.stdout.count("dn: ")

    p = h.ctl("directory", "down", "--dir", d)
    assert "stopped" in p.stdout, p.stdout
    with socket.socket() as s:
        s.settimeout(2)
        assert s.connect_ex(("127.0.0.1", ds["port"])) != 0


if __name__ == "__main__":
    mtharness.main(test)
