#!/usr/bin/env python3
"""test-cluster-providers.py -- `mailtierctl cluster up --directory-providers
2`: two slapd providers in multi-provider delta-syncrepl on loopback ports
(dirsvc/README.md "Two providers"), both URIs in [directory] uris. Checks:
provider 2 holds the offline-loaded users and the postmaster with the same
contextCSN; `cluster status` lists slapd2; with provider 1 killed, the MMP
(POP3 login) and the MTA (RCPT lookup) read through provider 2 and
`mailtierctl users add` writes there; a second `cluster up` restarts
provider 1, which catches up; `cluster down` stops both."""

import os
import poplib
import re
import signal
import smtplib
import subprocess
import time

import mtharness

SUFFIX = "dc=example,dc=test"
ADMIN = "cn=admin," + SUFFIX


def search(uri, pw, base, attr):
    r = subprocess.run(["ldapsearch", "-x", "-LLL", "-o", "ldif-wrap=no", "-H", uri,
                        "-D", ADMIN, "-w", pw, "-b", base, "-s", "base", attr],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        return []
    return sorted(re.findall(r"^%s: (.*)$" % attr, r.stdout, re.M | re.I))


def wait_for(what, fn, timeout=10.0):
    start = time.monotonic()
    while not fn():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.05)
    return time.monotonic() - start


def user(address):
    return f"uid={address},ou=people,{SUFFIX}"


def test(h):
    d = os.path.join(h.tmpdir, "cluster")
    base = mtharness.free_port_block(22)
    h.add_cleanup(lambda: h.ctl("cluster", "down", "--dir", d, check=False))
    p = h.ctl("cluster", "up", "--dir", d, "--base-port", base, "--users", 20,
              "--directory-providers", 2)
    env = mtharness.read_env(os.path.join(d, "endpoints.env"))
    uri1, uri2 = env["LDAP_URI"], env["LDAP2_URI"]
    assert env["DIRECTORY_PROVIDERS"] == "2" and uri1 == f"ldap://127.0.0.1:{base}/"
    assert f"uris = {uri1} {uri2}\n" in open(env["CONF"]).read()
    assert f"LDAP        {uri1} {uri2}" in p.stdout, p.stdout
    pw = open(os.path.join(d, "directory", "admin.secret")).read()
    assert open(os.path.join(d, "directory2", "admin.secret")).read() == pw
    assert os.stat(os.path.join(d, "directory2", "admin.secret")).st_mode & 0o077 == 0

    # Provider 2 joined empty and copied everything, CSNs of server id 001.
    for who in ("user20@example.test", "postmaster@example.test"):
        wait_for(who + " on provider 2",
                 lambda: search(uri2, pw, user(who), "mailHost") ==
                 search(uri1, pw, user(who), "mailHost") != [])
    wait_for("contextCSN equal",
             lambda: search(uri1, pw, SUFFIX, "contextCSN") ==
             search(uri2, pw, SUFFIX, "contextCSN"))
    assert all(c.split("#")[2] == "001" for c in search(uri1, pw, SUFFIX, "contextCSN"))
    st = h.ctl("cluster", "status", "--dir", d)
    assert re.search(r"^slapd2 +\d+ +ready +ldap=127.0.0.1:%s" % uri2.split(":")[2].rstrip("/"),
                     st.stdout, re.M), st.stdout

    # Provider 1 killed: the daemons read through provider 2, and writes go there.
    pid1 = int(open(os.path.join(d, "directory", "slapd.pid")).read())
    os.kill(pid1, signal.SIGKILL)
    wait_for("provider 1 gone", lambda: not os.path.exists(f"/proc/{pid1}"))
    start = time.monotonic()
    pop = poplib.POP3("127.0.0.1", int(env["POP3_PORT"]), timeout=30)
    pop.user("user7@example.test")
    pop.pass_("secret7")
    pop.quit()
    with smtplib.SMTP("127.0.0.1", int(env["SMTP_PORT"]), timeout=30) as s:
        s.ehlo("client.test")
        s.mail("sender@remote.test")
        code, msg = s.rcpt("user9@example.test")
        assert code == 250, (code, msg)
        s.rset()
    print(f"reads with provider 1 killed: {time.monotonic() - start:.2f} s "
          "(POP3 login + RCPT)")
    h.ctl("users", "add", "newbie@example.test", "--shard", "shard2",
          config=env["CONF"], input="newpw\n")
    csn = search(uri2, pw, user("newbie@example.test"), "entryCSN")
    assert len(csn) == 1 and csn[0].split("#")[2] == "002", csn

    # A second `up` restarts provider 1; it catches up.
    h.ctl("cluster", "up", "--dir", d)
    took = wait_for("provider 1 catches up",
                    lambda: search(uri1, pw, user("newbie@example.test"), "mailHost")
                    == ["shard2"] and search(uri1, pw, SUFFIX, "contextCSN") ==
                    search(uri2, pw, SUFFIX, "contextCSN"))
    print(f"provider 1 caught up {took:.2f} s after `cluster up` returned")

    h.ctl("cluster", "down", "--dir", d)
    for k in ("directory", "directory2"):
        pid = int(open(os.path.join(d, k, "slapd.pid")).read()) \
            if os.path.exists(os.path.join(d, k, "slapd.pid")) else 0
        assert pid == 0 or not os.path.exists(f"/proc/{pid}"), k


if __name__ == "__main__":
    mtharness.main(test)
