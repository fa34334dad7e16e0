#!/usr/bin/env python3
"""test-dirsvc-admin.py -- libdirsvc's admin API (dirsvc/dirsvc-admin.h)
against a real slapd (`mailtierctl directory up`), through
tests/integration/dirsvc-admin-client: an account is added (LDAP add, the
provision.h layout), found by address and alias, re-passworded (then
authenticated through libdirsvc's mt_dirsvc_authenticate with the new
password, refused with the old) and deleted; addresses with LDAP filter and
DN metacharacters stay one literal value (an address such as
`a*b)(uid=*@example.test` finds only an account of that very name, never the
others); a wrong admin password and a dead first URI behave."""

import os
import re
import subprocess

import mtharness


def test(h):
    ds = h.directory_up()
    conf, d = ds["conf"], ds["dir"]
    people = "ou=people,dc=example,dc=test"
    admin_client = h.binary("tests/integration/dirsvc-admin-client")
    dirsvc_client = h.binary("tests/integration/dirsvc-client")

    def admin(*args, config=conf):
        p = subprocess.run([admin_client, config] + list(args),
                           capture_output=True, text=True, timeout=60)
        h.note(f"admin {' '.join(args)} -> {p.returncode}: {p.stdout.strip()}")
        return p

    def ok(*args):
        p = admin(*args)
        assert p.returncode == 0 and p.stdout.startswith(("ok", "found")), (args, p)
        return p.stdout

    def found(address):
        out = ok("find", address).splitlines()
        n = int(out[0].split()[1])
        entries, cur = [], None
        for line in out[1:]:
            name, value = line.split(": ", 1)
            if name == "dn":
                cur = {"dn": value}
                entries.append(cur)
            else:
                cur.setdefault(name, []).append(value)
        assert len(entries) == n, out
        return entries

    def auth(user, password):
        p = subprocess.run([dirsvc_client, conf], input=f"auth {user} {password}\n",
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p
        return p.stdout.split()[1]

    # Add, then find by address (any case) and by alias.
    ok("add", "Alice@Example.TEST", "pw-one", "s2", "al@example.test")
    for address in ("alice@example.test", "ALICE@example.test", "al@example.test"):
        e = found(address)
        assert len(e) == 1, (address, e)
        e = e[0]
        assert e["dn"] == f"uid=alice@example.test,{people}", e
        assert e["uid"] == ["alice@example.test"] and e["mail"] == ["alice@example.test"], e
        assert e["mailLocalAddress"] == ["al@example.test"], e
        assert e["mailHost"] == ["s2"] and e["mailtierStatus"] == ["active"], e
        assert "userPassword" not in e, e
    assert found("nobody@example.test") == []

    # A second add of the same address is refused by slapd.
    p = admin("add", "alice@example.test", "x", "s1")
    assert p.returncode == 1 and "Already exists" in p.stdout, p

    # Password: the daemons' authentication API sees the change.
    assert auth("alice@example.test", "pw-one") == "status=ok"
    ok("passwd", "alice@example.test", "pw-two")
    assert auth("alice@example.test", "pw-two") == "status=ok"
    assert auth("alice@example.test", "pw-one") == "status=bad_credentials"
    p = admin("passwd", "nobody@example.test", "x")
    assert p.returncode == 1 and "No such object" in p.stdout, p

    # Filter metacharacters are escaped (RFC 4515): unescaped, these
    # filters would match every account (or fail with a size limit).
    ok("add", "bob@example.test", "pw-bob", "s1")
    for address in ("*@example.test", "*", "a*b)(uid=*@example.test",
                    "*)(|(uid=*", "alice@example.test)(uid=*", "\\2a@example.test"):
        assert found(address) == [], address
    # Such an address is one literal value: its own account, and only it.
    odd = "a*b)(uid=*@example.test"
    ok("add", odd, "pw-odd", "s1")
    e = found(odd)
    assert len(e) == 1 and e[0]["uid"] == [odd], e
    assert len(found("alice@example.test")) == 1
    # DN metacharacters are escaped (RFC 4514): one RDN directly under
    # ou=people, not a different place in the tree.
    comma = "c,uid=x+cn=y@example.test"
    ok("add", comma, "pw-comma", "s1")
    e = found(comma)
    assert len(e) == 1 and e[0]["uid"] == [comma], e
    dn = e[0]["dn"]
    assert dn.endswith("," + people), e
    # slapd answers the DN with hex escapes (uid=c\2Cuid\3Dx...): without
    # its escapes the first RDN must hold no separator.
    rdn = re.sub(r"\\([0-9A-Fa-f]{2}|.)", "", dn[:-len(people) - 1])
    assert "," not in rdn and "+" not in rdn, (rdn, e)
    # Deleting a wildcard address deletes nothing.
    p = admin("del", "*@example.test")
    assert p.returncode == 1 and "No such object" in p.stdout, p
    assert len(found("bob@example.test")) == 1

    # Delete.
    for address in ("alice@example.test", "bob@example.test", odd, comma):
        ok("del", address)
        assert found(address) == [], address
    p = admin("del", "alice@example.test")
    assert p.returncode == 1 and "No such object" in p.stdout, p
    assert auth("alice@example.test", "pw-two") == "status=bad_credentials"

    # Connection: a dead first URI is skipped; a wrong admin password is
    # refused with a reason.
    text = open(conf).read()
    uris_line = [l for l in text.splitlines() if l.strip().startswith("uris")][0]
    dead = f"ldap://127.0.0.1:{h.free_port()}/"
    failover = os.path.join(d, "failover.conf")
    with open(failover, "w") as f:
        f.write(text.replace(uris_line, f"uris = {dead} {ds['uri']}"))
    p = admin("add", "carol@example.test", "pw-carol", "s1", config=failover)
    assert p.returncode == 0, p
    assert len(found("carol@example.test")) == 1
    wrong_pw = os.path.join(d, "wrong.secret")
    with open(wrong_pw, "w") as f:
        f.write("not-the-admin-password\n")
    os.chmod(wrong_pw, 0o600)
    pw_line = [l for l in text.splitlines()
               if l.strip().startswith("admin_password_file")][0]
    wrong = os.path.join(d, "wrong.conf")
    with open(wrong, "w") as f:
        f.write(text.replace(pw_line, f"admin_password_file = {wrong_pw}"))
    p = admin("find", "carol@example.test", config=wrong)
    assert p.returncode == 1 and "cannot bind to the directory as cn=admin," in p.stdout \
        and "Invalid credentials" in p.stdout, p


if __name__ == "__main__":
    mtharness.main(test)
