#!/usr/bin/env python3
"""test-cluster-milter.py -- `mailtierctl cluster up --milter rspamd` (#17):
a one-shard cluster with Debian's rspamd started by mailtierctl in front of
the MTA's SMTP and submission listeners (its milter on P+8), resolving
through the test's own DNS server (filters.DnsServer: unbound serving
good.test, reject.test and example.test on loopback, given with --dns).

  - endpoints.env and mailtier.conf name the milter; `cluster status`
    lists rspamd as ready on its listener;
  - GTUBE to user1@example.test is refused 5xx 5.7.1, and so is mail from
    reject.test (DMARC p=reject, SPF fails for 127.0.0.1);
  - a clean message from someone@good.test (SPF allows 127.0.0.0/8) is
    accepted and read back through the MMP (POP3) with X-Spamd-Result and
    an Authentication-Results header saying spf=pass; an authenticated
    submission is scanned too;
  - a second `up` leaves rspamd running and refuses another --milter or
    --dns; `cluster logs rspamd` shows its log;
  - rspamd's log shows nothing reaching for a non-loopback address (no
    resolv.conf nameserver, no remote map);
  - `cluster down` stops rspamd after the MTA and leaves no rspamd process;
  - without rspamd (hidden by a bind mount, when root), `up --milter
    rspamd` names the package and starts nothing.

Skipped (77) only when rspamd is not installed."""

import email
import email.utils
import os
import poplib
import re
import smtplib
import socket
import ssl
import subprocess
import time

import filters
import mtharness

GTUBE = "XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X"


def message(sender, to, subject, body="Hello there.\r\n"):
    return (f"From: <{sender}>\r\nTo: <{to}>\r\nSubject: {subject}\r\n"
            f"Date: {email.utils.formatdate()}\r\n"
            f"Message-ID: <{subject.replace(' ', '-')}.{time.time_ns()}@test>\r\n"
            f"\r\n{body}").encode()


def refused(port, sender, to, msg):
    """(code, text) of the refusal of msg at the end of DATA."""
    try:
        with smtplib.SMTP("127.0.0.1", port, timeout=60) as s:
            s.sendmail(sender, [to], msg)
    except smtplib.SMTPDataError as e:
        return e.smtp_code, e.smtp_error.decode()
    raise AssertionError(f"accepted from {sender}")


def fetch_all(port, user, password, count, timeout=60):
    """The user's messages (bytes) through the MMP, once there are count."""
    deadline = time.monotonic() + timeout
    while True:
        p = poplib.POP3("127.0.0.1", port, timeout=10)
        p.user(user)
        p.pass_(password)
        n, _ = p.stat()
        if n >= count:
            got = [b"\r\n".join(p.retr(i)[1]) for i in range(1, n + 1)]
            p.quit()
            return got
        p.quit()
        assert time.monotonic() < deadline, f"{user}: {n} messages, want {count}"
        time.sleep(0.2)


def fields(data, name):
    """The unfolded values of the header fields called name."""
    msg = email.message_from_bytes(data)
    return [re.sub(r"\s+", " ", str(v)).strip() for v in msg.get_all(name, [])]


def port_open(port):
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def status_rows(h, d):
    p = h.ctl("cluster", "status", "--dir", d, check=False)
    rows = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^(slapd|shard\d+|mta|rspamd|mmp)\s+(\S+)\s+(\S+)\s+(.*)$", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3), m.group(4))
    return p.returncode, rows, p.stdout


def check_loopback_only(log):
    """Nothing in rspamd's log reaches off the machine: no remote map, no
    nameserver from resolv.conf, no address but 127.0.0.0/8."""
    maps = re.findall(r"(?:added map|read \S+ of \d+ elements from) (https?://\S+)", log)
    assert not maps, f"rspamd set up remote maps: {sorted(set(maps))}"
    assert "resolv.conf" not in log, "rspamd read resolv.conf despite --dns"
    addrs = set(re.findall(r"(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?![\w.])", log))
    outside = sorted(a for a in addrs if not a.startswith("127."))
    assert not outside, f"rspamd's log names non-loopback addresses: {outside}"


def rspamd_processes(pids, pgid):
    """Live (not zombie) processes among pids or in process group pgid."""
    live = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2:].split()
        state, pgrp = rest[0], int(rest[2])
        if state != "Z" and (int(entry) in pids or pgrp == pgid):
            live.append((int(entry), stat[:stat.rindex(")") + 1]))
    return live


def check_not_installed(h):
    """Without rspamd (hidden here by a bind mount of /dev/null over it in
    a mount namespace of our own), `up --milter rspamd` says what to
    install and writes or starts nothing. Needs root and unshare; left out
    otherwise."""
    program = os.path.realpath(filters.have("rspamd"))
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"],
                           capture_output=True) if os.geteuid() == 0 and \
        filters.have("unshare") else None
    if probe is None or probe.returncode != 0:
        h.note("not checked: up --milter rspamd without rspamd (needs root and unshare)")
        return
    d = os.path.join(h.tmpdir, "no-rspamd")
    p = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                        'mount --bind /dev/null "$0" && exec "$@"', program,
                        mtharness.binary("ctl/mailtierctl"), "cluster", "up", "--dir", d,
                        "--milter", "rspamd"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "apt-get install rspamd" in p.stderr, p
    assert not os.path.exists(d), os.listdir(d)


def test(h):
    if not filters.have("rspamd"):
        raise mtharness.Skip("rspamd is not installed (apt-get install rspamd)")
    started = time.monotonic()
    check_not_installed(h)
    # rspamd runs as _rspamd when we are root: it must reach DIR/rspamd
    # through the harness's private directory.
    os.chmod(h.tmpdir, 0o711)
    with filters.DnsServer(h) as dns:
        d = os.path.join(h.tmpdir, "cluster")
        base = mtharness.free_port_block(20)
        h.add_cleanup(lambda: h.ctl("cluster", "down", "--dir", d, check=False))
        p = h.ctl("cluster", "up", "--dir", d, "--shards", 1, "--users", 10,
                  "--base-port", base, "--milter", "rspamd", "--dns", dns.nameserver)
        assert re.search(r"^rspamd\s+ready \(pid \d+\)$", p.stdout, re.M), p.stdout
        # Started before the MTA.
        assert p.stdout.index("rspamd ") < p.stdout.index("mta "), p.stdout
        h.note(f"cluster up with rspamd after {time.monotonic() - started:.1f} s")
        env = mtharness.read_env(os.path.join(d, "endpoints.env"))
        assert env["MILTER"] == "rspamd", env
        assert int(env["MILTER_PORT"]) == base + 8, env
        assert env["DNS"] == dns.nameserver, env
        conf = open(env["CONF"]).read()
        for line in ("smtpd_milters = rspamd", "submission_milters = rspamd",
                     "[milter.rspamd]", f"address = inet:127.0.0.1:{base + 8}"):
            assert f"\n{line}\n" in conf, (line, conf)
        assert h.ctl("config", "check", config=env["CONF"]).stdout.strip() == "ok"
        options = open(os.path.join(d, "rspamd", "local", "local.d", "options.inc")).read()
        assert f'nameserver = ["{dns.nameserver}"];' in options, options

        rc, rows, out = status_rows(h, d)
        assert rc == 0, out
        assert set(rows) == {"slapd", "shard1", "mta", "rspamd", "mmp"}, out
        assert rows["rspamd"][1] == "ready", out
        assert rows["rspamd"][2] == f"milter=127.0.0.1:{base + 8}", out
        rspamd_pid = int(rows["rspamd"][0])
        assert open(os.path.join(d, "run", "rspamd.pid")).read().strip() == str(rspamd_pid)

        smtp, pop = int(env["SMTP_PORT"]), int(env["POP3_PORT"])
        user = "user1@example.test"
        # GTUBE: refused with rspamd's reply; DMARC p=reject failure too.
        code, text = refused(smtp, "someone@good.test", user,
                             message("someone@good.test", user, "gtube", GTUBE + "\r\n"))
        assert 500 <= code < 600 and text.startswith("5.7.1"), (code, text)
        code, text = refused(smtp, "someone@reject.test", user,
                             message("someone@reject.test", user, "dmarc reject"))
        assert 500 <= code < 600 and text.startswith("5.7.1"), (code, text)

        # A clean one from good.test: stored with rspamd's headers.
        with smtplib.SMTP("127.0.0.1", smtp, timeout=60) as s:
            s.sendmail("someone@good.test", [user],
                       message("someone@good.test", user, "clean one"))
        got = fetch_all(pop, user, "secret1", 1)
        assert len(got) == 1, got      # the refused ones were not stored
        data = got[0]
        assert b"Subject: clean one" in data, data
        assert fields(data, "X-Spamd-Result"), data
        results = fields(data, "Authentication-Results")
        assert len(results) == 1 and "spf=pass" in results[0], results
        assert "dmarc=pass" in results[0], results
        h.note(f"Authentication-Results: {results[0]}")

        # An authenticated submission goes through rspamd as well.
        ctx = ssl.create_default_context(cafile=os.path.join(d, "tls", "cert.pem"))
        with smtplib.SMTP("localhost", int(env["SUBMISSION_PORT"]), timeout=60) as s:
            s.starttls(context=ctx)
            s.login("user2@example.test", "secret2")
            s.sendmail("user2@example.test", [user],
                       message("user2@example.test", user, "submitted"))
        got = fetch_all(pop, user, "secret1", 2)
        assert b"Subject: submitted" in got[1] and fields(got[1], "X-Spamd-Result"), got[1]

        # A second up: rspamd is left running; other milter options refused.
        p = h.ctl("cluster", "up", "--dir", d)
        assert re.search(rf"^rspamd\s+already running \(pid {rspamd_pid}\)$", p.stdout,
                         re.M), p.stdout
        p = h.ctl("cluster", "up", "--dir", d, "--milter", "none", check=False)
        assert p.returncode != 0 and "--milter" in p.stderr, p.stderr
        p = h.ctl("cluster", "up", "--dir", d, "--dns", "127.0.0.1:1", check=False)
        assert p.returncode != 0 and "--dns" in p.stderr, p.stderr
        p = h.ctl("cluster", "up", "--dir", d, "--milter", "spamassassin", check=False)
        assert p.returncode == 2 and "none, rspamd" in p.stderr, p.stderr
        p = h.ctl("cluster", "logs", "--dir", d, "--no-follow", "--lines", 3, "rspamd")
        lines = p.stdout.splitlines()
        assert len(lines) == 3 and all(re.search(r" #\d+\(", x) for x in lines), p.stdout

        log = open(os.path.join(d, "log", "rspamd.log"), errors="replace").read()
        assert "rspamd_milter_process_command" in log, log[-2000:]
        check_loopback_only(log)
        assert all(client.startswith("127.") for client, _, _ in dns.queries()), \
            dns.queries()
        workers = {int(x) for x in re.findall(r"#(\d+)\((?!main)[a-z_]+\)", log)}
        assert workers, log[-2000:]

        # down: rspamd after the MTA, then nothing of it is left.
        p = h.ctl("cluster", "down", "--dir", d)
        order = [m.group(1) for m in re.finditer(r"^(\S+)\s+pid \d+ stopped$", p.stdout, re.M)]
        assert order == ["mmp", "mta", "rspamd", "shard1", "slapd"], p.stdout
        assert not os.path.exists(os.path.join(d, "run", "rspamd.pid"))
        left = rspamd_processes(workers | {rspamd_pid}, rspamd_pid)
        assert not left, left
        rc, rows, out = status_rows(h, d)
        assert rc != 0 and all(r[1] == "stopped" for r in rows.values()), out
        assert "rspamd" in rows, out
        assert not port_open(base + 8)
    h.note(f"test took {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    mtharness.main(test)
