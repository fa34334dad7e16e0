#!/usr/bin/env python3
"""test-sec-systemd.py -- the systemd units' hardening.

1. `systemd-analyze security --offline=yes` on each unit in
   packaging/systemd/: the overall exposure score must stay at or below the
   figure recorded here (1.4 for each since the security pass; 1.8 before
   RemoveIPC=, PrivateMounts= and SystemCallFilter=~@privileged
   @resources were added). A unit that loses a hardening option fails.
2. The units' extra system call deny list (their "SystemCallFilter=~..."
   lines) does not break the daemons: mailtier-popstore, mailtier-mta and
   mailtier-mmp run under exactly that filter (seccomp-wrap.py: the
   groups expanded by systemd-analyze, EPERM as SystemCallErrorNumber=),
   and a message goes in over SMTP, through the queue and LMTP into the
   store, and out through the MMP's POP3S.

Skipped (77) when systemd-analyze or libseccomp is not installed."""

import ctypes.util
import os
import poplib
import re
import shutil
import subprocess
import sys

import sec_setup
import mta_setup
import mtharness

HERE = os.path.dirname(os.path.abspath(__file__))
UNITS = os.path.join(HERE, "..", "..", "packaging", "systemd")
# The exposure scores at the security pass: lower is better. Lower the
# figure when a unit is hardened further; never raise it.
MAX_EXPOSURE = {
    "mailtier-mta.service": 1.4,
    "mailtier-mmp.service": 1.4,
    "mailtier-popstore@.service": 1.4,
}
ALICE = "alice@example.test"


def exposure(unit):
    p = subprocess.run(["systemd-analyze", "security", "--offline=yes",
                        "--no-pager", unit], capture_output=True, text=True,
                       timeout=120, cwd=UNITS)
    m = re.search(r"Overall exposure level for \S+: ([0-9.]+)", p.stdout + p.stderr)
    assert m, p.stdout + p.stderr
    return float(m.group(1))


def deny_groups():
    groups = set()
    for unit in MAX_EXPOSURE:
        with open(os.path.join(UNITS, unit)) as f:
            for line in f:
                if line.startswith("SystemCallFilter=~"):
                    groups.add(line.split("~", 1)[1].strip())
    assert len(groups) == 1, ("units differ in their deny lists", groups)
    return groups.pop()


def test(h):
    if shutil.which("systemd-analyze") is None:
        raise mtharness.Skip("systemd-analyze is not installed (Debian systemd)")
    scores = {u: exposure(u) for u in MAX_EXPOSURE}
    print("exposure:", scores)
    for unit, score in scores.items():
        assert score <= MAX_EXPOSURE[unit], (unit, score, MAX_EXPOSURE[unit])

    if ctypes.util.find_library("seccomp") is None:
        raise mtharness.Skip("libseccomp is not installed (Debian libseccomp2)")
    groups = deny_groups()
    os.environ["MT_DAEMON_WRAPPER"] = " ".join(
        [sys.executable, os.path.join(HERE, "seccomp-wrap.py"), f"'{groups}'"])
    env = mta_setup.MtaEnv(h, users={ALICE: "s1"}, shards=("s1",),
                           popstore=True)
    mmp_pop3, mmp_pop3s = h.free_ports(2)
    with open(env.conf, "a") as f:
        f.write(f"\n[mmp]\npop3_listen = 127.0.0.1:{mmp_pop3}\n"
                f"pop3s_listen = 127.0.0.1:{mmp_pop3s}\nthreads = 2\n"
                f"proxy_password_file = {env.dir}/proxy.secret\n"
                "stats_interval = 0\n")
    stores = env.start_popstores()
    mta = env.start_mta()
    mmp = h.start("mmp", [mtharness.binary("mmp/mailtier-mmp"), "-c",
                          env.conf, "-f"])
    for d in (stores["s1"], mta, mmp):
        d.wait_log(r"seccomp-wrap: \d+ system calls denied")
    with mta_setup.smtplib.SMTP("127.0.0.1", env.smtp_port, timeout=15) as s:
        s.sendmail("x@remote.test", [ALICE], "Subject: filtered\r\n\r\nok\r\n")

    def arrived():
        p = poplib.POP3_SSL("127.0.0.1", mmp_pop3s,
                            context=sec_setup.tls_client_context(), timeout=15)
        p.user(ALICE)
        p.pass_(mta_setup.PASSWORD)
        n = p.stat()[0]
        p.quit()
        return n == 1
    sec_setup.wait_until(arrived, what="the message through every tier")
    mta.reload()
    mmp.reload()
    stores["s1"].reload()
    for d in (mmp, mta, stores["s1"]):
        d.stop()
        assert "Operation not permitted" not in d.log(), d.name


if __name__ == "__main__":
    mtharness.main(test)
