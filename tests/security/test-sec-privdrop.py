#!/usr/bin/env python3
"""test-sec-privdrop.py -- every daemon, started as root with
[global] user = group = mailtier, binds its privileged ports (below 1024,
on 127.0.0.1) and then runs as mailtier with no capability left.

For mailtier-mta (SMTP, submission, submissions), mailtier-popstore (LMTP,
POP3, POP3S) and mailtier-mmp (POP3, POP3S), every thread's
/proc/PID/task/TID/status must show Uid and Gid (real, effective, saved,
filesystem) all mailtier's, only mailtier's groups, and CapInh, CapPrm,
CapEff and CapAmb all zero; the ports are bound (so the drop came after
the bind) and the cluster works as mailtier: a message in on the low SMTP
port, queued (written as mailtier), delivered over LMTP, read back through
the MMP's low POP3S port. CapBnd (the bounding set, which limits what an
exec could gain) is empty and NoNewPrivs is 1: lib/privdrop.c clears both
for a daemon started by hand, as the units' CapabilityBoundingSet= and
NoNewPrivileges= do.

Needs root (skipped otherwise); creates the mailtier system user if it is
missing (useradd --system)."""

import os
import poplib
import pwd
import grp
import socket
import subprocess

import sec_setup
import mta_setup
import mtharness

ALICE = "alice@example.test"


def low_ports(count):
    """count free TCP ports below 1024 on 127.0.0.1 (we are root)."""
    out, socks = [], []
    try:
        for port in range(1023, 600, -1):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                s.close()
                continue
            socks.append(s)
            out.append(port)
            if len(out) == count:
                return out
    finally:
        for s in socks:
            s.close()
    raise mtharness.Skip("not enough free ports below 1024")


def status_fields(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.split()
    return out


def check_process(name, pid, uid, gid):
    tasks = os.listdir(f"/proc/{pid}/task")
    report = None
    for tid in tasks:
        st = status_fields(f"/proc/{pid}/task/{tid}/status")
        assert st["Uid"] == [str(uid)] * 4, (name, tid, st["Uid"])
        assert st["Gid"] == [str(gid)] * 4, (name, tid, st["Gid"])
        groups = set(st.get("Groups", []))
        allowed = {str(g.gr_gid) for g in grp.getgrall()
                   if "mailtier" in g.gr_mem} | {str(gid)}
        assert groups <= allowed, (name, tid, "groups", groups)
        for cap in ("CapInh", "CapPrm", "CapEff", "CapAmb", "CapBnd"):
            assert int(st[cap][0], 16) == 0, (name, tid, cap, st[cap])
        assert st["NoNewPrivs"] == ["1"], (name, tid, "NoNewPrivs", st["NoNewPrivs"])
        report = {k: st[k][0] for k in ("CapPrm", "CapEff", "CapBnd",
                                        "NoNewPrivs") if k in st}
    print(f"{name}: pid {pid}, {len(tasks)} threads, uid/gid {uid}/{gid}, "
          f"{report}")


def test(h):
    if os.geteuid() != 0:
        raise mtharness.Skip("needs root (to bind ports below 1024 and drop)")
    try:
        pwd.getpwnam("mailtier")
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                        "/usr/sbin/nologin", "--user-group", "mailtier"],
                       check=True, capture_output=True, timeout=30)
    pw = pwd.getpwnam("mailtier")
    uid, gid = pw.pw_uid, grp.getgrnam("mailtier").gr_gid

    env = mta_setup.MtaEnv(h, users={ALICE: "s1"}, shards=("s1",),
                           popstore=True)
    (env.smtp_port, env.submission_port, env.submissions_port, lmtp, pop3,
     pop3s, mmp_pop3, mmp_pop3s) = low_ports(8)
    env.store_ports["s1"] = {"lmtp": lmtp, "pop3": pop3}
    env.write_config()
    with open(env.conf) as f:
        text = f.read()
    text = text.replace("[global]\nuser =\ngroup =\n",
                        "[global]\nuser = mailtier\ngroup = mailtier\n")
    text = text.replace("[popstore.s1]\n",
                        f"[popstore.s1]\npop3s_listen = 127.0.0.1:{pop3s}\n")
    secret = os.path.join(env.dir, "proxy.secret")
    text += (f"\n[mmp]\npop3_listen = 127.0.0.1:{mmp_pop3}\n"
             f"pop3s_listen = 127.0.0.1:{mmp_pop3s}\nthreads = 2\n"
             f"proxy_password_file = {secret}\nstats_interval = 0\n")
    with open(env.conf, "w") as f:
        f.write(text)
    # What the daemons touch after the drop must be mailtier's: the queue,
    # the store, and what they read (config, secrets, certificate).
    for d in (env.queue_dir, os.path.join(env.dir, "store-s1")):
        os.makedirs(d, exist_ok=True)
        os.chown(d, uid, gid)
    for root, dirs, files in os.walk(env.dir):
        os.chmod(root, 0o755)
        for f in files:
            path = os.path.join(root, f)
            if f.endswith(".secret") or f == "key.pem":
                os.chown(path, 0, gid)
                os.chmod(path, 0o640)
    os.chmod(h.tmpdir, 0o755)

    # The harness's sd_notify sockets must be writable by mailtier.
    old_umask = os.umask(0)
    try:
        stores = env.start_popstores()
        mta = env.start_mta()
        mmp = h.start("mmp", [mtharness.binary("mmp/mailtier-mmp"), "-c",
                              env.conf, "-f"])
    finally:
        os.umask(old_umask)
    for name, d in (("mailtier-popstore", stores["s1"]), ("mailtier-mta", mta),
                    ("mailtier-mmp", mmp)):
        d.wait_log(r"privdrop=done user=mailtier")
        check_process(name, d.pid, uid, gid)

    # Working as mailtier, on the low ports.
    with mta_setup.smtplib.SMTP("127.0.0.1", env.smtp_port, timeout=15) as s:
        s.sendmail("x@remote.test", [ALICE], "Subject: low\r\n\r\nas mailtier\r\n")
    def arrived():
        p = poplib.POP3_SSL("127.0.0.1", mmp_pop3s,
                            context=sec_setup.tls_client_context(), timeout=15)
        p.user(ALICE)
        p.pass_(mta_setup.PASSWORD)
        n = p.stat()[0]
        body = b"\n".join(p.retr(1)[1]) if n else b""
        p.quit()
        return n == 1 and b"as mailtier" in body
    sec_setup.wait_until(arrived, what="the message through every tier")
    st = os.stat(env.queue_dir)
    assert st.st_uid == uid
    for name in os.listdir(env.queue_dir):
        assert os.stat(os.path.join(env.queue_dir, name)).st_uid in (uid, 0), name
    for name, d in (("mailtier-popstore", stores["s1"]), ("mailtier-mta", mta),
                    ("mailtier-mmp", mmp)):
        check_process(name, d.pid, uid, gid)
    mmp.stop()
    mta.stop()
    stores["s1"].stop()


if __name__ == "__main__":
    mtharness.main(test)
