#!/usr/bin/env python3
"""test-cluster.py -- `mailtierctl cluster up|status|down|logs`: a whole
cluster (slapd, two store shards, the MTA, the MMP) started by one command
on a free block of loopback ports, used with real clients: mail in with
swaks and smtplib, out with curl and poplib (plain and implicit TLS against
the cluster's own certificate), remote mail relayed to mailtier-load's
sink. SIGHUP reloads each daemon without an sd_notify warning (`up` no
longer listens on the notify socket). Then: a killed daemon shows as stopped and a second `up` starts only
it; other mailtierctl commands work on the cluster with -c; `down` stops
everything and frees the ports."""

import imaplib
import json
import os
import poplib
import re
import signal
import smtplib
import socket
import ssl
import subprocess
import time

import mtharness


def port_open(port):
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def status(h, d):
    """(exit status, {name: (pid, state)}) of `cluster status`."""
    p = h.ctl("cluster", "status", "--dir", d, check=False)
    rows = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^(slapd|shard\d+|mta|mmp)\s+(\S+)\s+(\S+)\s", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3))
    return p.returncode, rows, p.stdout


def fetch_curl(port, user, password, msg=1):
    p = subprocess.run(["curl", "-sS", "--max-time", "20",
                        f"pop3://127.0.0.1:{port}/{msg}", "-u", f"{user}:{password}"],
                       capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout


def wait_log(path, pattern, timeout=20):
    deadline = time.monotonic() + timeout
    while not re.search(pattern, open(path, errors="replace").read()):
        assert time.monotonic() < deadline, f"{pattern!r} not in {path}"
        time.sleep(0.1)


def wait_mailbox(port, user, password, count, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        p = poplib.POP3("127.0.0.1", port, timeout=10)
        p.user(user)
        p.pass_(password)
        n, _ = p.stat()
        p.quit()
        if n >= count:
            return
        assert time.monotonic() < deadline, f"{user}: {n} messages, want {count}"
        time.sleep(0.2)


def imap_phases(results):
    """The level's warm-up and measured sums (mtharness.loadgen_level_sums),
    with no error and no failed session."""
    fns, kinds, counters, errors = mtharness.loadgen_level_sums(results)
    assert all(v == 0 for v in errors.values()), errors
    assert all(k["failed"] == 0 for k in kinds.values()), kinds
    return fns, kinds, counters


def imap_search(port, k, query, mailboxes):
    """Messages of user k matching the IMAP SEARCH query (its words as
    they go on the wire: imaplib quotes nothing), in mailboxes."""
    c = imaplib.IMAP4("127.0.0.1", port, timeout=30)
    c.login(f"user{k}@example.test", f"secret{k}")
    n = 0
    for mailbox in mailboxes:
        typ, _ = c.select(mailbox, readonly=True)
        assert typ == "OK", (k, mailbox)
        typ, data = c.search(None, *query)
        assert typ == "OK", (k, mailbox, data)
        n += len(data[0].split())
    c.logout()
    return n


def imap_load_runs(lg, conf, env, tmpdir):
    """#16: desktop replies submitted by SMTP (STARTTLS + AUTH PLAIN as the
    user on the MTA's submission port) reach their recipients, local and
    remote; the IMAP probe watcher times the delivery probes and empties
    the probe mailbox; --tls puts STARTTLS in every SMTP session."""
    imap_port, smtp = int(env["IMAP_PORT"]), int(env["SMTP_PORT"])
    # Steady state: fill's mail read. Then six unread messages to each of
    # users 1-8, alternately from a user of ours (1-7: never the probe user
    # 8, whose INBOX the watcher empties of the run's mail) and from a
    # remote correspondent (user1000+k@remote.test), the first from ours
    # (read first by every session of the user), so that replies go both
    # ways (the run's own mail, mostly from remote senders, adds remote
    # ones: about half and half in all, 15-20 replies).
    for k in range(1, 9):
        c = imaplib.IMAP4("127.0.0.1", imap_port, timeout=30)
        c.login(f"user{k}@example.test", f"secret{k}")
        typ, data = c.select("INBOX")
        if int(data[0]) > 0:
            assert c.store("1:*", "+FLAGS.SILENT", "(\\Seen)")[0] == "OK"
        c.logout()
    with smtplib.SMTP("127.0.0.1", smtp, timeout=30) as s:
        for k in range(1, 9):
            for i in range(6):
                sender = (f"user{k % 7 + 1}@example.test" if i % 2 == 0
                          else f"user{1000 + k}@remote.test")
                s.sendmail(sender, [f"user{k}@example.test"],
                           f"From: <{sender}>\r\nTo: <user{k}@example.test>\r\n"
                           f"Subject: unread {i}\r\n\r\nplease reply\r\n")
    deadline = time.monotonic() + 30
    for k in range(1, 9):
        while imap_search(imap_port, k, ("UNSEEN",), ("INBOX",)) < 6:
            assert time.monotonic() < deadline, f"user{k}: the unread mail did not arrive"
            time.sleep(0.2)

    # A run: 15 msgs/min of load on the 8 mailboxes (4 IMAP sessions/s, about
    # 70 desktop sessions open at the end: under the MMP's 100 a client),
    # a probe every second.
    report = os.path.join(tmpdir, "imap-report")
    p = subprocess.run([lg, "run", "--config", conf, "--protocol", "imap", "--users", "8",
                        "--rate", "15", "--levels", "100", "--warmup", "1", "--duration", "20",
                        "--cooldown", "30", "--probe-interval", "1", "--probe-poll", "1",
                        "--progress", "0", "--seed", "5", "--report", report],
                       capture_output=True, text=True, timeout=180)
    print(p.stdout[-5000:], p.stderr[-2000:])
    assert p.returncode in (0, 1), p.stdout + p.stderr   # 1: too few to judge
    results = json.load(open(os.path.join(report, "results.json")))
    fns, kinds, counters = imap_phases(results)
    assert kinds["imap-desktop"]["attempted"] + kinds["imap-webmail"]["attempted"] > 0, kinds
    for key in ("imap_login", "imap_select", "imap_fetch_body"):
        assert fns[key]["attempts"] > 0 and fns[key]["pass"] == fns[key]["attempts"], (key, fns[key])
    # (1) The replies: each submission's steps once, all passed; local and
    # remote recipients both.
    submitted = kinds["imap-reply-submit"]["attempted"]
    assert submitted > 0 and counters["msgs_submitted"] == submitted, (kinds, counters)
    for key in ("smtp_submit_connect", "smtp_submit_ehlo", "smtp_submit_starttls",
                "smtp_submit_auth", "smtp_submit_mail", "smtp_submit_data", "smtp_submit_quit"):
        want = 2 * submitted if key == "smtp_submit_ehlo" else submitted  # EHLO again after TLS
        assert fns[key]["attempts"] == want and fns[key]["pass"] == want, (key, fns[key], submitted)
    assert counters["submitted_rcpts_local"] > 0 and counters["submitted_rcpts_remote"] > 0, counters
    # A remote reply reached the sink: every remote copy (the replies'
    # among them) arrived there, timed, none lost or still awaited.
    totals = results["totals"]["counters"]
    assert results["sink"]["rcpts"] == totals["rcpts_to_remote"], (results["sink"], totals)
    assert totals["deliveries_lost"] == 0 and totals["deliveries_unresolved"] == 0, totals
    # A local reply is stored: "Re: " and this run's id in the subject.
    run_id = results["run_id"]
    query = ("HEADER", "Subject", f'"Re: mailtier-load test message {run_id}."')
    folders = ("INBOX", "Folder1", "Folder2", "Folder3", "Folder4", "Folder5")
    deadline = time.monotonic() + 20
    while sum(imap_search(imap_port, k, query, folders) for k in range(1, 8)) == 0:
        assert time.monotonic() < deadline, "no local reply was stored"
        time.sleep(0.5)
    # (3) The probes: timed by the IMAP watcher (IDLE on the probe
    # mailbox), all within 60 s; then deleted: no probe of this run is
    # left in the probe user's INBOX.
    assert counters["probes_local"] > 0, counters
    assert fns["delivery"]["attempts"] >= counters["probes_local"], fns["delivery"]
    assert fns["delivery"]["pass"] == fns["delivery"]["attempts"], fns["delivery"]
    probes = results["probes"]["functions"]
    for key in ("imap_login", "imap_select", "imap_idle", "imap_fetch_headers",
                "imap_store", "imap_expunge"):
        assert probes[key]["attempts"] > 0 and probes[key]["pass"] == probes[key]["attempts"], \
            (key, probes[key])
    assert results["probes"]["counters"]["probe_session_errors"] == 0, results["probes"]
    assert imap_search(imap_port, 8, ("HEADER", "Subject",
                                      f'"mailtier-load delivery probe {run_id}."'),
                       ("INBOX",)) == 0

    # (2) --tls: STARTTLS in every SMTP session (the MTA's port 25 offers
    # it with the cluster's certificate), in every IMAP session and
    # submission; the probes' sessions too.
    report = os.path.join(tmpdir, "imap-tls-report")
    p = subprocess.run([lg, "run", "--config", conf, "--protocol", "imap", "--tls",
                        "--users", "8", "--rate", "19", "--levels", "100", "--warmup", "1",
                        "--duration", "5", "--cooldown", "20", "--probe-interval", "1",
                        "--progress", "0", "--seed", "6", "--report", report],
                       capture_output=True, text=True, timeout=120)
    print(p.stdout[-3000:], p.stderr[-2000:])
    assert p.returncode in (0, 1), p.stdout + p.stderr
    results = json.load(open(os.path.join(report, "results.json")))
    fns, kinds, counters = imap_phases(results)
    smtp_sessions = kinds["smtp-local"]["attempted"] + kinds["smtp-remote"]["attempted"]
    imap_sessions = kinds["imap-desktop"]["attempted"] + kinds["imap-webmail"]["attempted"]
    assert smtp_sessions > 0 and imap_sessions > 0, kinds
    for key, want in (("smtp_starttls", smtp_sessions), ("imap_starttls", imap_sessions),
                      ("smtp_submit_starttls", kinds["imap-reply-submit"]["attempted"])):
        assert fns[key]["attempts"] == want and fns[key]["pass"] == want, (key, fns[key], want)
    assert fns["smtp_ehlo"]["attempts"] == 2 * smtp_sessions, fns["smtp_ehlo"]
    probes = results["probes"]
    assert probes["functions"]["smtp_starttls"]["attempts"] == \
        probes["sessions"]["smtp-remote"]["attempted"] > 0, probes["functions"]["smtp_starttls"]
    assert probes["functions"]["imap_starttls"]["pass"] > 0, probes["functions"]["imap_starttls"]
    assert fns["delivery"]["pass"] == fns["delivery"]["attempts"] > 0, fns["delivery"]


def test(h):
    if subprocess.run(["sh", "-c", "command -v swaks && command -v curl"],
                      capture_output=True).returncode != 0:
        raise mtharness.Skip("swaks and curl are needed (scripts/install-deps)")
    d = os.path.join(h.tmpdir, "cluster")
    base = mtharness.free_port_block(20)
    h.add_cleanup(lambda: h.ctl("cluster", "down", "--dir", d, check=False))
    p = h.ctl("cluster", "up", "--dir", d, "--base-port", base, "--users", 40)
    assert "cluster " + d + " is up" in p.stdout, p.stdout
    env = mtharness.read_env(os.path.join(d, "endpoints.env"))
    assert env["CONF"] == os.path.join(d, "mailtier.conf")
    assert env["DOMAIN"] == "example.test" and env["REMOTE_DOMAIN"] == "remote.test"
    assert int(env["SMTP_PORT"]) == base + 1 and int(env["POP3_PORT"]) == base + 4
    assert int(env["IMAP_PORT"]) == base + 6 and int(env["IMAPS_PORT"]) == base + 7
    assert env["LDAP_URI"] == f"ldap://127.0.0.1:{base}/"
    assert env["SINK"] == f"127.0.0.1:{base + 9}"
    for n in (1, 2):
        assert int(env[f"SHARD{n}_LMTP_PORT"]) == base + 8 + 2 * n
        assert int(env[f"SHARD{n}_POP3_PORT"]) == base + 9 + 2 * n
        assert int(env[f"SHARD{n}_IMAP_PORT"]) == base + 13 + n
    conf = env["CONF"]
    smtp, pop, pops = int(env["SMTP_PORT"]), int(env["POP3_PORT"]), int(env["POP3S_PORT"])

    rc, rows, out = status(h, d)
    assert rc == 0, out
    assert set(rows) == {"slapd", "shard1", "shard2", "mta", "mmp"}, out
    assert all(state == "ready" for _, state in rows.values()), out

    # The users are in the directory, on both shards.
    shards = set()
    for k in range(1, 41):
        shown = h.ctl("users", "show", f"user{k}@example.test", config=conf).stdout
        shards.add(re.search(r"mailHost:\s*(\S+)|shard:\s*(\S+)", shown).group(0).split()[-1])
    assert shards == {"shard1", "shard2"}, shards

    # swaks in, curl out (through the MMP).
    sw = subprocess.run(["swaks", "--server", f"127.0.0.1:{smtp}", "--to",
                         "user3@example.test", "--from", "someone@remote.test",
                         "--header", "Subject: cluster test", "--body", "hello from swaks"],
                        capture_output=True, text=True, timeout=60)
    assert sw.returncode == 0 and "250 2.0.0" in sw.stdout, sw.stdout + sw.stderr
    wait_mailbox(pop, "user3@example.test", "secret3", 1)
    body = fetch_curl(pop, "user3@example.test", "secret3")
    assert b"hello from swaks" in body and b"Subject: cluster test" in body, body

    # <Postmaster> is provisioned: mail to it arrives (RFC 5321 4.5.1).
    secret = open(os.path.join(d, "postmaster.secret")).read().strip()
    with smtplib.SMTP("127.0.0.1", smtp, timeout=30) as s:
        s.sendmail("a@remote.test", ["<postmaster>"], "Subject: to pm\r\n\r\nhi pm\r\n")
    wait_mailbox(pop, "postmaster@example.test", secret, 1)

    # smtplib to a user on each shard, poplib over implicit TLS.
    by_shard = {}
    for k in range(1, 41):
        shown = h.ctl("users", "show", f"user{k}@example.test", config=conf).stdout
        by_shard.setdefault("shard1" if "shard1" in shown else "shard2", k)
    ctx = ssl.create_default_context(cafile=os.path.join(d, "tls", "cert.pem"))
    for shard, k in by_shard.items():
        text = f"Subject: to {shard}\r\n\r\nbody for user{k}\r\n"
        with smtplib.SMTP("127.0.0.1", smtp, timeout=30) as s:
            s.sendmail("a@remote.test", [f"user{k}@example.test"], text)
        wait_mailbox(pop, f"user{k}@example.test", f"secret{k}", 1)
        p = poplib.POP3_SSL("localhost", pops, context=ctx, timeout=10)
        p.user(f"user{k}@example.test")
        p.pass_(f"secret{k}")
        n, _ = p.stat()
        got = b"\r\n".join(p.retr(n)[1])
        p.quit()
        assert f"body for user{k}".encode() in got, got
        # The same message over IMAP, straight from the user's shard.
        n_shard = int(shard[len("shard"):])
        c = imaplib.IMAP4("127.0.0.1", int(env[f"SHARD{n_shard}_IMAP_PORT"]), timeout=10)
        c.login(f"user{k}@example.test", f"secret{k}")
        typ, data = c.select("INBOX")
        assert typ == "OK", data
        typ, data = c.fetch(data[0].decode(), "(BODY.PEEK[TEXT])")
        assert typ == "OK" and f"body for user{k}".encode() in data[0][1], data
        c.logout()
        # And through the MMP: IMAPS, then IDLE woken by mail sent by SMTP
        # through the MTA.
        c = imaplib.IMAP4_SSL("localhost", int(env["IMAPS_PORT"]), ssl_context=ctx,
                              timeout=30)
        c.login(f"user{k}@example.test", f"secret{k}")
        typ, data = c.select("INBOX")
        exists = int(data[0])
        tag = c._new_tag().decode()
        c.send(f"{tag} IDLE\r\n".encode())
        assert c.readline().startswith(b"+"), "IDLE continuation"
        with smtplib.SMTP("127.0.0.1", smtp, timeout=30) as s:
            s.sendmail("a@remote.test", [f"user{k}@example.test"],
                       f"Subject: idle {shard}\r\n\r\nwake up\r\n")
        line = c.readline()
        assert line.strip() == f"* {exists + 1} EXISTS".encode(), line
        c.send(b"DONE\r\n")
        assert c.readline().startswith(tag.encode() + b" OK")
        c.logout()

    # Remote mail goes to the sink (never off this machine).
    sink = subprocess.Popen([mtharness.binary("loadgen/mailtier-load"), "sink",
                             "--listen", env["SINK"], "--duration", "15"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    h.add_cleanup(lambda: sink.kill())
    mtharness.wait_port(base + 9)
    with smtplib.SMTP("127.0.0.1", smtp, timeout=30) as s:
        s.sendmail("user1@example.test", ["far@remote.test"], "Subject: out\r\n\r\nout\r\n")
    h.ctl("queue", "flush", config=conf)
    out, _ = sink.communicate(timeout=40)
    assert re.search(r"messages 1,", out), out

    # mailtier-load's IMAP workload through the MMP ([loadgen] imap is the
    # MMP's IMAP port, submission the MTA's): the folder model by IMAP,
    # then runs with replies submitted and probes watched by IMAP IDLE.
    lg = mtharness.binary("loadgen/mailtier-load")
    p = subprocess.run([lg, "fill", "--config", conf, "--lmtp-shards", "--protocol", "imap",
                        "--users", "8", "--progress", "0"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and re.search(r"folders by IMAP \(127\.0\.0\.1:%s\): "
                                           r"users 8 \(failed 0\)" % env["IMAP_PORT"],
                                           p.stdout), p.stdout + p.stderr
    imap_load_runs(lg, conf, env, h.tmpdir)

    # SIGHUP after `up` has gone: the daemons reload without a warning about
    # the notify socket `up` listened on only until READY=1.
    for name in ("mta", "mmp", "shard1"):
        os.kill(int(rows[name][0]), signal.SIGHUP)
    log = {name: os.path.join(d, "log", name + ".log") for name in ("mta", "mmp", "shard1")}
    wait_log(log["mta"], r"reload: done")
    wait_log(log["mmp"], r"reload: TLS certificate and key reloaded")
    wait_log(log["shard1"], r"reload")
    for name, path in log.items():
        text = open(path, errors="replace").read()
        assert not re.search(r"sd_notify\(.*failed", text), (name, text[-2000:])
        assert "notifications off" in text, (name, text[-2000:])

    # A killed daemon: status says so, `up` starts only it.
    mta_pid = int(rows["mta"][0])
    os.kill(mta_pid, 9)
    deadline = time.monotonic() + 10
    while True:
        rc, rows2, out = status(h, d)
        if rows2["mta"][1] == "stopped":
            break
        assert time.monotonic() < deadline, out
        time.sleep(0.1)
    assert rc != 0, out
    p = h.ctl("cluster", "up", "--dir", d)
    assert re.search(r"shard1\s+already running", p.stdout), p.stdout
    assert re.search(r"mta\s+ready", p.stdout), p.stdout
    rc, rows3, out = status(h, d)
    assert rc == 0, out
    assert rows3["mmp"][0] == rows["mmp"][0] and rows3["mta"][0] != rows["mta"][0], out
    with smtplib.SMTP("127.0.0.1", smtp, timeout=30) as s:
        s.sendmail("a@remote.test", ["user3@example.test"], "Subject: again\r\n\r\nagain\r\n")
    wait_mailbox(pop, "user3@example.test", "secret3", 2)

    # Other options must agree with the cluster that is there.
    p = h.ctl("cluster", "up", "--dir", d, "--shards", 3, check=False)
    assert p.returncode != 0 and "--shards" in p.stderr, p.stderr

    # Logs, and the other commands with -c.
    p = h.ctl("cluster", "logs", "--dir", d, "--no-follow", "--lines", 3, "mta")
    assert "mailtier-mta" in p.stdout, p.stdout
    assert "ok" in h.ctl("config", "check", config=conf).stdout
    h.ctl("queue", "list", config=conf)
    assert "mailboxes" in h.ctl("store", "stat", "shard1", config=conf).stdout.lower()

    # down: every daemon stops, the ports close.
    p = h.ctl("cluster", "down", "--dir", d)
    assert p.stdout.count("stopped") == 5, p.stdout
    rc, rows, out = status(h, d)
    assert all(state == "stopped" for _, state in rows.values()), out
    for port in (base, smtp, pop, base + 10, base + 11):
        assert not port_open(port), port


if __name__ == "__main__":
    mtharness.main(test)
