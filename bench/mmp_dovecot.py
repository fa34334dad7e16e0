"""mmp_dovecot -- Dovecot's POP3 proxy in front of the same mailtier stores,
for bench/mmp (the "dovecot" part).

Dovecot (Debian dovecot-pop3d + dovecot-ldap, proxy=y) authenticates
against the same slapd (passdb ldap as the mailtier service DN, verifying
the {SSHA512} userPassword itself), routes by mailHost to the shard's POP3
port, and logs in there with the user's own password (the store accepts
plaintext logins from 127.0.0.1). Two set-ups, each measured with the same
load client and mailboxes as the MMP:

  defaults     Dovecot as installed: one pop3-login process per connection
               (service_count = 1), no auth cache;
  performance  its documented high-performance settings: login processes
               that serve many connections (service_count = 0,
               process_min_avail = CPU count) and an auth cache.

Returns {"defaults": {...}, "performance": {...}} with the runs and
medians. Runs as root (Dovecot drops to dovenull/dovecot itself).
Benchmark code, not a test.
"""

import os
import statistics
import subprocess
import sys
import time

import mmp_setup


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _conf(b, name, port, performance):
    c = b.c
    d = os.path.join(b.h.tmpdir, f"dovecot-{name}")
    for sub in ("run", "state"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    with open(os.path.join(c.dir, "service.secret")) as f:
        dnpass = f.readline().strip()
    with open(os.path.join(c.dir, "directory.conf")) as f:
        uri = [l.split("=", 1)[1].strip().split()[0] for l in f
               if l.startswith("uris")][0]
    p1, p2 = c.pop3_port["s1"], c.pop3_port["s2"]
    _write(os.path.join(d, "ldap.conf.ext"), f"""\
uris = {uri}
dn = cn=mailtier-service,dc=example,dc=test
dnpass = {dnpass}
auth_bind = no
ldap_version = 3
base = ou=people,dc=example,dc=test
scope = onelevel
pass_filter = (&(objectClass=inetOrgPerson)(uid=%u))
pass_attrs = uid=user, userPassword=password, =proxy=y, =host=127.0.0.1, \\
  =port=%{{if;%{{ldap:mailHost}};eq;s1;{p1};{p2}}}
""")
    login = ("  service_count = 0\n  process_min_avail = 2\n"
             if performance else "")
    cache = ("auth_cache_size = 10M\nauth_cache_ttl = 1 hour\n"
             if performance else "")
    conf = os.path.join(d, "dovecot.conf")
    _write(conf, f"""\
instance_name = mmpbench-{name}
base_dir = {d}/run
state_dir = {d}/state
log_path = {d}/dovecot.log
info_log_path = {d}/dovecot-info.log
protocols = pop3
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain
{cache}passdb {{
  driver = ldap
  args = {d}/ldap.conf.ext
}}
userdb {{
  driver = static
  args = uid=vmail gid=vmail home=/nonexistent
}}
service pop3-login {{
  inet_listener pop3 {{
    address = 127.0.0.1
    port = {port}
  }}
{login}}}
service imap-login {{
  inet_listener imap {{
    port = 0
  }}
}}
service lmtp {{
  unix_listener lmtp {{
    mode = 0600
  }}
}}
""")
    return d, conf


def _start(conf, port):
    # The master forks into the background: no pipes it could keep open.
    subprocess.run(["dovecot", "-c", conf], check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=30)
    if not mmp_setup.mtharness.wait_port(port, timeout=15):
        raise RuntimeError(f"dovecot ({conf}) does not answer on {port}")


def _stop(d, conf):
    subprocess.run(["dovecot", "-c", conf, "stop"], stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=30)
    pidfile = os.path.join(d, "run", "master.pid")
    for _ in range(100):
        if not os.path.exists(pidfile):
            return
        time.sleep(0.1)


def _tree_cpu_s(d):
    """CPU seconds of a Dovecot instance: the master with its reaped
    children (cutime, cstime) plus every live child."""
    with open(os.path.join(d, "run", "master.pid")) as f:
        master = int(f.read().split()[0])
    tck = os.sysconf("SC_CLK_TCK")

    def stat(pid):
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    total = sum(int(x) for x in stat(master)[11:15])
    for task in os.listdir(f"/proc/{master}/task"):
        with open(f"/proc/{master}/task/{task}/children") as f:
            for child in f.read().split():
                try:
                    total += sum(int(x) for x in stat(child)[11:15])
                except FileNotFoundError:
                    pass    # exited meanwhile: in the master's cutime soon
    return total / tck


def run(b):
    out = {}
    for name, performance in (("defaults", False), ("performance", True)):
        port = b.h.free_port()
        d, conf = _conf(b, name, port, performance)
        _start(conf, port)
        b.h.add_cleanup(lambda d=d, conf=conf: _stop(d, conf))
        try:
            check = subprocess.run(["doveadm", "-c", conf, "auth", "test",
                                    b.users[0][0], b.users[0][1]],
                                   capture_output=True, text=True, timeout=30)
            if check.returncode != 0 or "port=" not in check.stdout:
                raise RuntimeError(f"dovecot auth test: {check.stdout}{check.stderr}")
            runs = []
            for i in range(b.args.runs):
                b.fill()
                c0 = _tree_cpu_s(d)
                r = b.load(port)
                cpu = _tree_cpu_s(d) - c0
                if r["sessions"]:
                    r["proxy_cpu_us_per_session"] = round(cpu / r["sessions"] * 1e6)
                b.empty = b.users[:r["sessions"] + r["errors"]]
                print(f"  dovecot {name}: {r['sessions_per_s']} sessions/s "
                      f"({r['sessions']} ok, {r['errors']} errors), proxy CPU "
                      f"{r.get('proxy_cpu_us_per_session')} us/session",
                      file=sys.stderr, flush=True)
                runs.append(r)
            out[name] = {"runs": runs, "median_sessions_per_s":
                         statistics.median(r["sessions_per_s"] for r in runs),
                         "median_proxy_cpu_us_per_session": statistics.median(
                             r.get("proxy_cpu_us_per_session", 0) for r in runs)}
        finally:
            _stop(d, conf)
    return out
