#!/usr/bin/env python3
"""test-mta-daemon.py -- mailtier-mta as a daemon: config errors stop it
with FILE:LINE; READY=1 and WATCHDOG=1 over sd_notify; max_sessions and
max_sessions_per_client answered with 421; command_timeout; mynetworks
(a client on 127.0.0.2 may relay, one on 127.0.0.1 may not); SIGHUP with a
broken config keeps the running one, SIGHUP with a new certificate serves
it to the next TLS client; SIGTERM drains: an idle session gets 421 at
once, one in the middle of DATA finishes its message (250) and then gets
421, and the daemon exits 0; a queued message survives a clean restart."""

import os
import signal
import socket
import ssl
import subprocess
import time

import mta_setup
import mtharness

ALICE = "alice@example.test"


def raw_from(env, source_ip):
    """A RawSmtp whose socket is bound to source_ip."""
    s = socket.socket()
    s.settimeout(10)
    s.bind((source_ip, 0))
    s.connect(("127.0.0.1", env.smtp_port))
    r = mta_setup.RawSmtp.__new__(mta_setup.RawSmtp)
    r.sock, r.buf = s, b""
    r.greeting = r.reply()
    return r


def peer_cert_subject(env):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", env.submissions_port), timeout=10) as s:
        with ctx.wrap_socket(s) as t:
            der = t.getpeercert(binary_form=True)
    p = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-subject"],
                       input=der, capture_output=True, timeout=10)
    return p.stdout.decode().strip()


def check_config_errors(h, env):
    bad = os.path.join(env.dir, "bad.conf")
    with open(env.conf) as f:
        text = f.read()
    with open(bad, "w") as f:
        f.write(text + "max_recipients = lots\n")
    p = subprocess.run([mtharness.binary("mta/mailtier-mta"), "-f", "-c", bad],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 1, p
    assert f"{bad}:" in p.stderr and "max_recipients" in p.stderr, p.stderr
    with open(bad, "w") as f:
        f.write(text.replace("mynetworks = 127.0.0.2/32", "mynetworks = 10.0.0.0/33") +
                "dns_servers = ns.example.test\n")
    p = h.ctl("config", "check", config=bad, check=False)
    out = p.stdout + p.stderr
    assert p.returncode == 1 and "'10.0.0.0/33': prefix length too large" in out, out
    assert "dns_servers: 'ns.example.test'" in out, out


def check_limits(env):
    # Per client: two from 127.0.0.1, the third refused; 127.0.0.2 is fine.
    a, b = env.raw(), env.raw()
    c = env.raw()
    assert c.greeting[0] == 421 and "4.7.0" in c.greeting[1], c.greeting
    d = raw_from(env, "127.0.0.2")
    assert d.greeting[0] == 220
    # max_sessions = 3: a fourth from anywhere is refused.
    e = raw_from(env, "127.0.0.3")
    assert e.greeting[0] == 421 and "4.3.2" in e.greeting[1], e.greeting
    # mynetworks = 127.0.0.2/32: relaying from d, not from a.
    assert d.cmd("EHLO d.test")[0] == 250
    d.cmd("MAIL FROM:<x@example.test>")
    assert d.cmd("RCPT TO:<someone@elsewhere.test>")[0] == 250
    a.cmd("EHLO a.test")
    a.cmd("MAIL FROM:<x@example.test>")
    assert a.cmd("RCPT TO:<someone@elsewhere.test>")[0] == 554
    for r in (a, b, c, d, e):
        r.close()
    time.sleep(0.3)
    # command_timeout = 2s.
    r = env.raw()
    r.sock.settimeout(10)
    code, text = r.reply()
    assert code == 421 and "timeout" in text, text
    r.close()


def check_reload(env):
    subject1 = peer_cert_subject(env)
    with open(env.conf) as f:
        good = f.read()
    with open(env.conf, "w") as f:
        f.write(good + "no_such_key = 1\n")
    env.mta.reload()
    env.mta.wait_log(r"reload: .* has errors; keeping the running config")
    assert env.mta.running()
    # A new certificate under the same file names.
    os.rename(env.cert, env.cert + ".old")
    os.rename(env.key, env.key + ".old")
    newdir = os.path.join(env.dir, "new")
    os.makedirs(newdir)
    cert, key = mta_setup.make_cert(newdir, cn="renewed.example.test")
    os.rename(cert, env.cert)
    os.rename(key, env.key)
    with open(env.conf, "w") as f:
        f.write(good)
    env.mta.reload()
    env.mta.wait_log(r"reload: done")
    subject2 = peer_cert_subject(env)
    assert "renewed.example.test" in subject2 and subject1 != subject2, (subject1, subject2)


def check_drain_and_restart(env):
    s1 = env.shards["s1"]
    # A message that must wait in the queue across the restart.
    s1.stop()
    with env.smtp() as s:
        s.sendmail("x@remote.test", [ALICE], "Subject: across restart\r\n\r\nx\r\n")
    idle = env.raw()
    busy = env.raw()
    busy.cmd("EHLO busy.test")
    busy.cmd("MAIL FROM:<x@remote.test>")
    busy.cmd(f"RCPT TO:<{ALICE}>")
    assert busy.cmd("DATA")[0] == 354
    env.mta.send_signal(signal.SIGTERM)
    code, text = idle.reply()
    assert code == 421 and "4.3.2" in text, text
    busy.send("Subject: during drain\r\n\r\nstill accepted\r\n.\r\n")
    code, text = busy.reply()
    assert code == 250, text
    code, text = busy.cmd("NOOP")
    assert code == 421, text
    took = env.mta.stop(timeout=15)
    assert took < 10, took
    s1.start()
    env.start_mta(name="mta2")
    got = s1.wait_messages(2)
    subjects = {m.data.split(b"Subject: ")[1].split(b"\r\n")[0] for m in got}
    assert {b"across restart", b"during drain"} <= subjects, subjects


def test(h):
    env = mta_setup.MtaEnv(h, users={ALICE: "s1"}, mta_options={
        "max_sessions": "3", "max_sessions_per_client": "2",
        "command_timeout": "2s"})
    check_config_errors(h, env)
    env.mta = h.start("mta", [mtharness.binary("mta/mailtier-mta"), "-f", "-c", env.conf],
                      watchdog_usec=2_000_000)
    env.mta.wait_notify("WATCHDOG=1", timeout=5)
    check_limits(env)
    check_reload(env)
    check_drain_and_restart(env)
    env.mta.stop()


if __name__ == "__main__":
    mtharness.main(test)
