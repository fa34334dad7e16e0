#!/usr/bin/env python3
"""test-metrics.py -- every daemon's metrics endpoint on a whole local
cluster (`mailtierctl cluster up`: slapd, two store shards, the MTA, the
MMP), read as Prometheus reads it.

  - each daemon's /metrics passes `promtool check metrics` (Debian's
    prometheus package) and names its daemon in mailtier_build_info; HEAD
    answers the same length without a body;
  - known traffic moves the counters by exactly its size: 10 messages sent
    with smtplib raise mailtier_mta_messages_accepted_total by 10, the
    SMTP DATA commands, the lmtp deliveries and their latency histogram by
    10, the two shards' stored deliveries by 10 together; an MMP login
    that works and one with a wrong password move the MMP's logins and the
    shard's backend logins;
  - mailtier_sessions_closed_total{listener,outcome} counts how sessions
    ended, exactly: the 11 SMTP sessions that say QUIT raise outcome quit
    by 11 and nothing else, and every SMTP session accepted is then one
    closed; one that idles past command_timeout (3 s here) raises timeout,
    one that hangs up without QUIT client_closed; an IMAP LOGOUT on a
    shard quit; through the MMP a POP3 QUIT before login is quit, a
    relayed session's end is the store's (backend_closed) or the
    client's, and the store counts the relayed QUIT as quit;
  - mailtier_mta_recipients_total{destination} counts recipients accepted
    at RCPT: the 10 messages' local users raise local by 10 (the refused
    one is not counted), a transaction with a remote recipient (given
    twice: counted once) and a local one raises each by 1 though it is
    reset before DATA;
  - mailtier_popstore_purge_backlog_messages: a POP3 session that deletes a
    mailbox's N messages leaves N waiting for the purger once its QUIT is
    answered (purge_delay is 3 s here), and the purger brings it back to 0
    within a bounded wait;
  - mailtier_mmp_sessions_idle: an IMAP session relayed by the MMP counts
    once it has moved no byte for idle_session_threshold (2 s here), not
    before; a NOOP takes it out at once, silence puts it back, LOGOUT
    ends it;
  - a shard killed with SIGKILL shows as mailtier_mmp_shard_up 0 once a
    login found it down, and 1 again after it is restarted;
  - bad requests to the metrics port while mail flows (more idle
    connections than the limit, a client sending a byte a second, a head
    over 8 KiB, another path, POST with a body, HTTP/2, garbage) get their
    status code or are closed, and every message of the flow is still
    accepted; the endpoint then serves as before;
  - `mailtierctl cluster status` prints the endpoints' counters (the
    same values as the scrape) and `cluster top`'s rates over its interval
    add up to the 10 messages sent inside it; with a shard killed, top
    names its endpoint as unreachable and exits 1;
  - mailtier-load --metrics-listen serves the run's figures while it runs
    (promtool-valid; the run's message counter grows during the measured
    phase and ends at no more than the report's total)."""

import http.client
import imaplib
import os
import poplib
import re
import signal
import smtplib
import socket
import subprocess
import threading
import time

import mtharness


def scrape(port, method="GET", path="/metrics"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, r.getheader("Content-Type"), r.getheader("Content-Length"), body


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def samples(text):
    """[(name, {label: value}, float)] of a text exposition."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        labels = dict(LABEL.findall(m.group(2) or ""))
        out.append((m.group(1), labels, float(m.group(3))))
    return out


def value(port, name, **labels):
    """The sum of NAME's samples whose labels include these."""
    status, _, _, body = scrape(port)
    assert status == 200, status
    return sum(v for n, l, v in samples(body.decode())
               if n == name and all(l.get(k) == want for k, want in labels.items()))


def wait_value(port, name, want, timeout=30, **labels):
    deadline = time.time() + timeout
    while True:
        got = value(port, name, **labels)
        if got == want or time.time() > deadline:
            return got
        time.sleep(0.2)


def pids(h, d):
    p = h.ctl("cluster", "status", "--dir", d, check=False)
    rows = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^(slapd|shard\d+|mta|mmp)\s+(\S+)\s+(\S+)\s", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def raw_request(port, data, timeout=15):
    """Send data, return what the server answered until it closed."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        got = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            got += chunk
        return got


def check_endpoints(ports):
    for name, port in ports.items():
        status, ctype, length, body = scrape(port)
        assert status == 200, (name, status)
        assert ctype == "text/plain; version=0.0.4; charset=utf-8", (name, ctype)
        assert int(length) == len(body) and len(body) > 1000, (name, length, len(body))
        p = subprocess.run(["promtool", "check", "metrics"], input=body,
                           capture_output=True, timeout=30)
        assert p.returncode == 0 and p.stdout == b"" and p.stderr == b"", \
            (name, p.returncode, p.stdout, p.stderr)
        daemon = {"mta": "mailtier-mta", "mmp": "mailtier-mmp"}.get(name, "mailtier-popstore")
        text = body.decode()
        assert re.search(r'^mailtier_build_info\{daemon="%s",version="[^"]+"\} 1$' % daemon,
                         text, re.M), (name, text[:400])
        assert value(port, "process_resident_memory_bytes") > 1e6
        assert value(port, "process_open_fds") > 3
        status, _, head_length, head_body = scrape(port, "HEAD")
        assert status == 200 and head_body == b"" and abs(int(head_length) - len(body)) < 4096
        status, _, _, _ = scrape(port, "GET", "/other")
        assert status == 404, status


def closed(port, listener):
    """{outcome: count} of mailtier_sessions_closed_total for listener."""
    status, _, _, body = scrape(port)
    assert status == 200, status
    return {l["outcome"]: v for n, l, v in samples(body.decode())
            if n == "mailtier_sessions_closed_total" and l.get("listener") == listener}


def wait_closed(port, listener, want, timeout=15):
    """Wait until listener's outcomes are want ({outcome: count}; the
    others as before); return what was seen last."""
    deadline = time.time() + timeout
    while True:
        got = closed(port, listener)
        if got == want or time.time() > deadline:
            return got
        time.sleep(0.2)


def plus(before, **more):
    want = dict(before)
    for outcome, n in more.items():
        want[outcome] += n
    return want


def set_keys(conf, section, keys):
    """Add key = value lines at the start of [section] in conf."""
    lines = open(conf).read().split("\n")
    at = lines.index(f"[{section}]") + 1
    lines[at:at] = [f"{k} = {v}" for k, v in keys.items()]
    open(conf, "w").write("\n".join(lines))


def send(smtp_port, rcpt, subject):
    with smtplib.SMTP("127.0.0.1", smtp_port, timeout=30) as s:
        refused = s.sendmail("a@remote.test", [rcpt], f"Subject: {subject}\r\n\r\nbody\r\n")
        assert refused == {}, refused


def test(h):
    if subprocess.run(["sh", "-c", "command -v promtool"], capture_output=True).returncode != 0:
        raise mtharness.Skip("promtool is needed (Debian's prometheus package)")
    d = os.path.join(h.tmpdir, "cluster")
    base = mtharness.free_port_block(20)
    h.add_cleanup(lambda: h.ctl("cluster", "down", "--dir", d, check=False))
    h.ctl("cluster", "up", "--dir", d, "--base-port", base, "--users", 20)
    env = mtharness.read_env(os.path.join(d, "endpoints.env"))
    conf = env["CONF"]
    # Shorter bounds than a real site's, so the test need not wait for
    # them: an SMTP session idles out after 3 s.
    h.ctl("cluster", "down", "--dir", d)
    set_keys(conf, "mta", {"command_timeout": "3s"})
    # Expunged bodies wait 3 s for the purger: long enough to see them.
    set_keys(conf, "popstore", {"purge_delay": "3s"})
    # A relayed session without a byte for 2 s counts as idle.
    set_keys(conf, "mmp", {"idle_session_threshold": "2s"})
    h.ctl("cluster", "up", "--dir", d)
    smtp, pop = int(env["SMTP_PORT"]), int(env["POP3_PORT"])
    mta, mmp = int(env["MTA_METRICS_PORT"]), int(env["MMP_METRICS_PORT"])
    shards = {1: int(env["SHARD1_METRICS_PORT"]), 2: int(env["SHARD2_METRICS_PORT"])}
    check_endpoints({"mta": mta, "mmp": mmp, "shard1": shards[1], "shard2": shards[2]})

    by_shard = {}
    for k in range(1, 21):
        shown = h.ctl("users", "show", f"user{k}@example.test", config=conf).stdout
        by_shard.setdefault("shard1" if "shard1" in shown else "shard2", []).append(k)
    assert set(by_shard) == {"shard1", "shard2"}, by_shard

    # 10 messages: the counters move by exactly 10.
    accepted = value(mta, "mailtier_mta_messages_accepted_total")
    data_ok = value(mta, "mailtier_commands_total", protocol="smtp", command="data", result="ok")
    sessions = value(mta, "mailtier_sessions_total", listener="smtp")
    delivered = value(mta, "mailtier_mta_deliveries_total", destination="lmtp",
                      result="delivered")
    latency_count = value(mta, "mailtier_mta_delivery_latency_seconds_count",
                          destination="lmtp")
    stored = sum(value(p, "mailtier_popstore_deliveries_total") for p in shards.values())
    stored_bytes = sum(value(p, "mailtier_popstore_stored_bytes_total") for p in shards.values())
    lmtp_data = sum(value(p, "mailtier_commands_total", protocol="lmtp", command="data")
                    for p in shards.values())
    replies_2xx = value(mta, "mailtier_replies_total", protocol="smtp", **{"class": "2xx"})
    replies_5xx = value(mta, "mailtier_replies_total", protocol="smtp", **{"class": "5xx"})
    rcpt_failures = value(mta, "mailtier_address_failures_total", table="rcpt")
    rcpts_local = value(mta, "mailtier_mta_recipients_total", destination="local")
    rcpts_remote = value(mta, "mailtier_mta_recipients_total", destination="remote")
    smtp_closed = closed(mta, "smtp")
    assert set(smtp_closed) == {"quit", "client_closed", "timeout", "error", "limit",
                                "refused", "shutdown", "backend_closed"}, smtp_closed
    for i in range(10):
        send(smtp, f"user{1 + i}@example.test", f"counted {i}")
    # One refused recipient: a 5xx reply (and its session's 2xx ones).
    with smtplib.SMTP("127.0.0.1", smtp, timeout=30) as s:
        s.ehlo("counted")
        s.mail("sender@remote.test")
        code, _ = s.rcpt("nobody-here@example.test")
        assert 500 <= code < 600, code
        s.rset()
    assert value(mta, "mailtier_mta_messages_accepted_total") == accepted + 10
    assert value(mta, "mailtier_sessions_total", listener="smtp") == sessions + 11
    assert value(mta, "mailtier_mta_recipients_total", destination="local") == rcpts_local + 10
    assert value(mta, "mailtier_mta_recipients_total", destination="remote") == rcpts_remote
    # A session's commands are added when it ends (smtplib has quit).
    assert wait_value(mta, "mailtier_commands_total", data_ok + 10, protocol="smtp",
                      command="data", result="ok") == data_ok + 10
    # Each of the 10 sessions: EHLO, MAIL, RCPT, DATA (its final 250), QUIT;
    # the 11th: EHLO, MAIL, RSET, QUIT and the refused RCPT.
    assert wait_value(mta, "mailtier_replies_total", replies_2xx + 54, protocol="smtp",
                      **{"class": "2xx"}) == replies_2xx + 54
    assert value(mta, "mailtier_replies_total", protocol="smtp",
                 **{"class": "5xx"}) == replies_5xx + 1
    # The 11 sessions ended with QUIT, and every SMTP session so far is
    # closed once (the cluster's start-up probes as client_closed).
    assert wait_closed(mta, "smtp", plus(smtp_closed, quit=11)) == \
        plus(smtp_closed, quit=11)
    assert sum(closed(mta, "smtp").values()) == \
        value(mta, "mailtier_sessions_total", listener="smtp")
    # One that says nothing until command_timeout: its 421 and timeout;
    # one that hangs up without QUIT: client_closed.
    before = closed(mta, "smtp")
    with socket.create_connection(("127.0.0.1", smtp), timeout=20) as s:
        got = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    assert got.startswith(b"220 ") and b"\r\n421 4.4.2 " in got, got
    assert wait_closed(mta, "smtp", plus(before, timeout=1)) == plus(before, timeout=1)
    with socket.create_connection(("127.0.0.1", smtp), timeout=20) as s:
        assert s.recv(4096).startswith(b"220 ")
    assert wait_closed(mta, "smtp", plus(before, timeout=1, client_closed=1)) == \
        plus(before, timeout=1, client_closed=1)
    # Recipients by destination, counted at their 250 (127.0.0.1 is in
    # mynetworks: it may relay); nothing is queued (RSET).
    with smtplib.SMTP("127.0.0.1", smtp, timeout=30) as s:
        s.ehlo("recipients")
        s.mail("sender@remote.test")
        remote = "someone@" + env["REMOTE_DOMAIN"]
        for rcpt in (remote, remote, "user1@example.test"):
            code, _ = s.rcpt(rcpt)
            assert code == 250, (rcpt, code)
        s.rset()
    assert value(mta, "mailtier_mta_recipients_total", destination="local") == rcpts_local + 11
    assert value(mta, "mailtier_mta_recipients_total", destination="remote") == rcpts_remote + 1
    # The unknown recipient is not counted against the client's address:
    # 127.0.0.1 is in mynetworks, which rcpt_fail_limit spares; the tables
    # are exported all the same, and no address is in any label.
    body = scrape(mta)[3]
    assert value(mta, "mailtier_address_failures_total",
                 table="rcpt") == rcpt_failures
    for table in (b"client", b"rcpt"):
        assert b'mailtier_address_refusals_total{table="%s",limit="sessions"}' % table in body
    assert b"127.0.0.1" not in body
    # The queue's checkpoint durations (one written every 60 s: none yet).
    assert b"mailtier_mta_checkpoint_duration_seconds_count " in body
    assert wait_value(mta, "mailtier_mta_deliveries_total", delivered + 10,
                      destination="lmtp", result="delivered") == delivered + 10
    assert value(mta, "mailtier_mta_delivery_latency_seconds_count",
                 destination="lmtp") == latency_count + 10
    assert wait_value(mta, "mailtier_mta_queue_messages", 0) == 0
    assert sum(value(p, "mailtier_popstore_deliveries_total")
               for p in shards.values()) == stored + 10
    # Each stored copy is the message and the store's Return-Path/Received.
    grown = sum(value(p, "mailtier_popstore_stored_bytes_total")
                for p in shards.values()) - stored_bytes
    assert 10 * len("Subject: counted 0\r\n\r\nbody\r\n") <= grown <= 10 * 4096, grown
    assert value(mta, "mailtier_mta_queue_commit_latency_seconds_count") >= 10
    assert sum(value(p, "mailtier_popstore_commit_latency_seconds_count")
               for p in shards.values()) >= 10
    # The MTA's LMTP sessions to the shards end when it closes them; their
    # DATA commands are counted then (at least the ones already closed).
    assert sum(value(p, "mailtier_commands_total", protocol="lmtp", command="data")
               for p in shards.values()) >= lmtp_data

    ctl_views(h, d, env, mta, shards)

    # A mailbox selected over IMAP is open; after LOGOUT it is not.
    k1 = by_shard["shard1"][0]
    assert value(shards[1], "mailtier_popstore_mailboxes_open") == 0
    imap_closed = closed(shards[1], "imap")
    c = imaplib.IMAP4("127.0.0.1", int(env["SHARD1_IMAP_PORT"]), timeout=10)
    c.login(f"user{k1}@example.test", f"secret{k1}")
    c.select("INBOX")
    assert value(shards[1], "mailtier_popstore_mailboxes_open") == 1
    no = value(shards[1], "mailtier_replies_total", protocol="imap", **{"class": "no"})
    bad = value(shards[1], "mailtier_replies_total", protocol="imap", **{"class": "bad"})
    assert c.select("No/Such/Folder")[0] == "NO"
    try:
        c.xatom("FROBNICATE")
        raise AssertionError("an unknown IMAP command was accepted")
    except imaplib.IMAP4.error:
        pass
    c.logout()
    assert wait_value(shards[1], "mailtier_popstore_mailboxes_open", 0, timeout=10) == 0
    assert wait_value(shards[1], "mailtier_replies_total", no + 1, timeout=10, protocol="imap",
                      **{"class": "no"}) == no + 1
    assert value(shards[1], "mailtier_replies_total", protocol="imap",
                 **{"class": "bad"}) == bad + 1
    assert value(shards[1], "mailtier_commands_total", protocol="imap", command="select",
                 result="ok") >= 1
    assert wait_closed(shards[1], "imap", plus(imap_closed, quit=1)) == \
        plus(imap_closed, quit=1)

    # MMP logins: one good, one wrong password.
    k = by_shard["shard1"][0]
    ok = value(mmp, "mailtier_mmp_logins_total", result="ok")
    failed = value(mmp, "mailtier_mmp_logins_total", result="failed")
    mmp_failures = value(mmp, "mailtier_address_failures_total", table="client")
    backend_ok = value(mmp, "mailtier_mmp_backend_logins_total", shard="shard1",
                       protocol="pop3", result="ok")
    mmp_sessions = value(mmp, "mailtier_sessions_total", listener="pop3")
    mmp_closed = closed(mmp, "pop3")
    store_closed = closed(shards[1], "pop3")
    p = poplib.POP3("127.0.0.1", pop, timeout=10)
    p.user(f"user{k}@example.test")
    p.pass_(f"secret{k}")
    p.quit()
    p = poplib.POP3("127.0.0.1", pop, timeout=10)
    p.user(f"user{k}@example.test")
    try:
        p.pass_("wrong")
        raise AssertionError("a wrong password was accepted")
    except poplib.error_proto:
        pass
    p.quit()
    assert value(mmp, "mailtier_mmp_logins_total", result="ok") == ok + 1
    assert value(mmp, "mailtier_mmp_logins_total", result="failed") == failed + 1
    assert value(mmp, "mailtier_address_failures_total",
                 table="client") == mmp_failures + 1
    assert value(mmp, "mailtier_mmp_backend_logins_total", shard="shard1", protocol="pop3",
                 result="ok") == backend_ok + 1
    # The two sessions: the MMP answered the second's QUIT itself (quit);
    # the first's QUIT went to the store, which said +OK and closed
    # (backend_closed), unless poplib's own close reached the MMP first.
    assert value(mmp, "mailtier_sessions_total", listener="pop3") == mmp_sessions + 2
    deadline = time.time() + 15
    while sum(closed(mmp, "pop3").values()) < sum(mmp_closed.values()) + 2 and \
            time.time() < deadline:
        time.sleep(0.2)
    now = closed(mmp, "pop3")
    assert sum(now.values()) == sum(mmp_closed.values()) + 2, (mmp_closed, now)
    assert now["quit"] == mmp_closed["quit"] + 1, (mmp_closed, now)
    assert now["backend_closed"] + now["client_closed"] == \
        mmp_closed["backend_closed"] + mmp_closed["client_closed"] + 1, (mmp_closed, now)
    assert wait_closed(shards[1], "pop3", plus(store_closed, quit=1)) == \
        plus(store_closed, quit=1)

    # Idle relayed sessions: an IMAP login through the MMP, then silence.
    idle = "mailtier_mmp_sessions_idle"
    assert value(mmp, idle) == 0
    c = imaplib.IMAP4("127.0.0.1", int(env["IMAP_PORT"]), timeout=10)
    c.login(f"user{k}@example.test", f"secret{k}")
    quiet_since = time.monotonic()
    assert value(mmp, "mailtier_mmp_sessions_relaying") == 1
    assert value(mmp, idle) == 0
    assert wait_value(mmp, idle, 1, timeout=15) == 1
    assert time.monotonic() - quiet_since >= 1.5
    c.noop()
    assert value(mmp, idle) == 0       # its bytes ended the quiet period
    assert wait_value(mmp, idle, 1, timeout=15) == 1
    c.logout()
    assert wait_value(mmp, idle, 0, timeout=10) == 0
    assert wait_value(mmp, "mailtier_mmp_sessions_relaying", 0, timeout=10) == 0

    # The purge backlog: a POP3 QUIT that deletes every message of a
    # mailbox on shard1 leaves them for the purger (3 s later), which
    # then empties it.
    k = next(k for k in by_shard["shard1"] if k <= 10)     # has mail
    backlog = "mailtier_popstore_purge_backlog_messages"
    assert wait_value(shards[1], backlog, 0, timeout=20) == 0
    expunged = value(shards[1], "mailtier_popstore_expunged_messages_total")
    p = poplib.POP3("127.0.0.1", pop, timeout=10)
    p.user(f"user{k}@example.test")
    p.pass_(f"secret{k}")
    n = p.stat()[0]
    assert n >= 2, n
    for i in range(1, n + 1):
        p.dele(i)
    p.quit()
    assert value(shards[1], backlog) == n
    assert value(shards[1], "mailtier_popstore_expunged_messages_total") == expunged + n
    assert wait_value(shards[1], backlog, 0, timeout=20) == 0

    # A shard killed: the MMP's gauge says so once a login found it down,
    # and it is back after the restart.
    assert value(mmp, "mailtier_mmp_shard_up", shard="shard2", protocol="pop3") == 1
    k2 = by_shard["shard2"][0]
    os.kill(int(pids(h, d)["shard2"]), signal.SIGKILL)
    time.sleep(0.5)
    p = poplib.POP3("127.0.0.1", pop, timeout=10)
    p.user(f"user{k2}@example.test")
    try:
        p.pass_(f"secret{k2}")
        raise AssertionError("a login to a killed shard worked")
    except poplib.error_proto as e:
        assert b"SYS/TEMP" in e.args[0], e
    p.quit()
    assert value(mmp, "mailtier_mmp_shard_up", shard="shard2", protocol="pop3") == 0
    assert value(mmp, "mailtier_mmp_shard_up", shard="shard1", protocol="pop3") == 1
    assert value(mmp, "mailtier_mmp_backend_logins_total", shard="shard2", protocol="pop3",
                 result="failed") >= 1
    # `cluster top` names the daemon whose endpoint is gone and fails.
    p = h.ctl("cluster", "top", "--dir", d, "--interval", "0.5", "--count", "1", check=False)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert re.search(r"^shard2\s+no\s+127\.0\.0\.1:%d: cannot connect" % shards[2],
                     p.stdout, re.M), p.stdout
    assert re.search(r"^shard1\s+yes\s", p.stdout, re.M), p.stdout
    h.ctl("cluster", "up", "--dir", d)
    assert wait_value(mmp, "mailtier_mmp_shard_up", 1, timeout=40, shard="shard2",
                      protocol="pop3") == 1
    shards[2] = int(env["SHARD2_METRICS_PORT"])

    # Bad requests while mail flows.
    flow_errors = []
    flow_accepted = value(mta, "mailtier_mta_messages_accepted_total")

    def flow():
        try:
            for i in range(30):
                send(smtp, f"user{1 + i % 20}@example.test", f"flow {i}")
        except Exception as e:  # reported by the main thread
            flow_errors.append(repr(e))

    t = threading.Thread(target=flow)
    t.start()
    try:
        idle = [socket.create_connection(("127.0.0.1", mta), timeout=10) for _ in range(16)]
        time.sleep(0.3)
        got = raw_request(mta, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        assert got.startswith(b"HTTP/1.1 503 "), got[:80]
        for s in idle:
            s.close()
        # Until the endpoint has seen those closes it may still say 503.
        deadline = time.time() + 15
        while scrape(mta)[0] == 503 and time.time() < deadline:
            time.sleep(0.2)
        assert value(mta, "mailtier_metrics_http_connections_refused_total") >= 1

        big = b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n"
        assert raw_request(mta, big).startswith(b"HTTP/1.1 431 ")
        assert raw_request(mta, b"GET /foo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                           ).startswith(b"HTTP/1.1 404 ")
        got = raw_request(mta, b"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")
        assert got.startswith(b"HTTP/1.1 405 ") and b"Allow: GET, HEAD" in got, got[:200]
        assert raw_request(mta, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").startswith(b"HTTP/1.1 505 ")
        assert raw_request(mta, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"
                           ).startswith(b"HTTP/1.1 400 ")

        # A client that sends a byte a second is cut off after its 10 s.
        request = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow\r\n\r\n"
        started = time.time()
        closed_after = None
        with socket.create_connection(("127.0.0.1", mta), timeout=30) as s:
            for i, byte in enumerate(request):
                try:
                    s.send(bytes([byte]))
                except (BrokenPipeError, ConnectionResetError):
                    closed_after = i
                    break
                time.sleep(0.5)
                if i > 0 and i % 4 == 0:
                    s.setblocking(False)
                    try:
                        if s.recv(1) == b"":
                            closed_after = i
                            break
                    except BlockingIOError:
                        pass
                    except ConnectionResetError:
                        closed_after = i
                        break
                    finally:
                        s.setblocking(True)
        elapsed = time.time() - started
        assert closed_after is not None and closed_after < len(request) - 1, \
            (closed_after, elapsed)
        assert 9 <= elapsed <= 20, elapsed
    finally:
        t.join(timeout=120)
    assert not t.is_alive() and flow_errors == [], flow_errors
    assert value(mta, "mailtier_mta_messages_accepted_total") == flow_accepted + 30
    status, _, _, body = scrape(mta)
    assert status == 200 and b"mailtier_mta_queue_messages" in body
    assert value(mta, "mailtier_metrics_http_requests_total", code="431") >= 1
    check_endpoints({"mta": mta, "mmp": mmp, "shard1": shards[1], "shard2": shards[2]})
    loadgen_live(h, conf)


def ctl_views(h, d, env, mta, shards):
    """`mailtierctl cluster status` and `cluster top` show what the
    endpoints say: status's counters are the metrics' values, top's rates
    over its interval add up to the messages sent within it."""
    # status reads the metrics before its connect probes of the listeners
    # (each probe is a session), so the count read here is the one shown.
    smtp_sessions = int(value(mta, "mailtier_sessions_total", listener="smtp"))
    p = h.ctl("cluster", "status", "--dir", d)
    out = p.stdout
    assert "counters: each daemon's /metrics (metrics_listen)" in out, out
    line = re.search(r"^\s+metrics 127\.0\.0\.1:%d: (.*)$" % mta, out, re.M)
    assert line, out
    accepted = int(value(mta, "mailtier_mta_messages_accepted_total"))
    assert re.search(r"; accepted %d, refused 0," % accepted, line.group(1)), line.group(1)
    assert re.search(r"sessions smtp=%d " % smtp_sessions, line.group(1)), line.group(1)
    assert "; queue 0, oldest 0 s;" in line.group(1), line.group(1)
    delivered = 0
    for n, port in shards.items():
        m = re.search(r"^\s+metrics 127\.0\.0\.1:%d: .*; deliveries (\d+), " % port, out, re.M)
        assert m, out
        assert int(m.group(1)) == int(value(port, "mailtier_popstore_deliveries_total")), out
        delivered += int(m.group(1))
    assert delivered >= 10, out

    # top: one frame over 4 s, 10 messages sent inside it. Its first
    # scrape of the MTA is seen as a request to the MTA's endpoint that is
    # not one of this test's own (each of which adds 1 after its answer
    # is rendered); the 10 messages then go out, and count only if they
    # were all accepted before top's second scrape could have happened.
    requests = "mailtier_metrics_http_requests_total"
    since = time.monotonic()
    seen = value(mta, requests)
    top = subprocess.Popen([mtharness.binary("ctl/mailtierctl"), "cluster", "top", "--dir", d,
                            "--interval", "4", "--count", "1"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while True:
        polled = time.monotonic()
        now = value(mta, requests)
        if now > seen + 1:
            break           # top's first scrape came after `since`
        assert time.monotonic() < deadline and top.poll() is None, "top never scraped the MTA"
        since, seen = polled, now
        time.sleep(0.05)
    for i in range(10):
        send(int(env["SMTP_PORT"]), f"user{1 + i}@example.test", f"top {i}")
    sent_within = time.monotonic() < since + 3.8
    out, err = top.communicate(timeout=60)
    assert top.returncode == 0, (top.returncode, out, err)
    dt = float(re.search(r"rates over ([0-9.]+) s, from each daemon's /metrics", out).group(1))
    row = re.search(r"^mta\s+yes\s+\S+\s+\S+ \S+\s+\d+\s+\d+\s+([0-9.]+)\s+"
                    r"accepted/s ([0-9.]+) delivered/s", out, re.M)
    assert row, out
    sessions_rate, accepted_rate = float(row.group(1)), float(row.group(2))
    assert accepted_rate > 0, out
    print(f"top: rates over {dt} s: sessions {sessions_rate}/s, accepted {accepted_rate}/s; "
          f"sent within its interval: {sent_within}")
    if sent_within:
        # top prints the interval and the rates rounded to 0.1: 10 events
        # over the true interval, rounded, must give what it printed.
        def fits(printed_rate):
            return 10 / (dt + 0.05) - 0.05 - 1e-9 <= printed_rate <= \
                10 / (dt - 0.05) + 0.05 + 1e-9
        assert fits(accepted_rate), (accepted_rate, dt, out)
        assert fits(sessions_rate), (sessions_rate, dt, out)
    for name in ("shard1", "shard2", "mmp"):
        assert re.search(r"^%s\s+yes\s" % name, out, re.M), out


def loadgen_live(h, conf):
    """mailtier-load's own figures, scraped while it loads the cluster."""
    port = mtharness.free_port()
    report = os.path.join(h.tmpdir, "load-report")
    lg = subprocess.Popen([mtharness.binary("loadgen/mailtier-load"), "run", "--config", conf,
                           "--rate", "600", "--users", "20", "--levels", "100",
                           "--warmup", "1", "--duration", "8", "--cooldown", "3",
                           "--probe-interval", "0", "--progress", "0", "--seed", "3",
                           "--report", report, "--metrics-listen", f"127.0.0.1:{port}"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    h.add_cleanup(lambda: lg.kill())
    mtharness.wait_port(port, proc=lg, timeout=20)
    seen, validated = [], False
    deadline = time.time() + 60
    while lg.poll() is None and time.time() < deadline:
        try:
            status, _, _, body = scrape(port)
        except (ConnectionError, OSError):
            break   # the run has ended and closed its endpoint
        assert status == 200, status
        text = body.decode()
        if not validated and "mailtier_load_phase 1" in text:
            p = subprocess.run(["promtool", "check", "metrics"], input=body,
                               capture_output=True, timeout=30)
            assert p.returncode == 0 and p.stdout == b"" and p.stderr == b"", p
            validated = True
        got = {n: v for n, l, v in samples(text) if not l}
        seen.append((got["mailtier_load_phase"], got["mailtier_load_messages_total"]))
        time.sleep(0.5)
    out = lg.communicate(timeout=60)[0].decode()
    assert lg.returncode in (0, 1), out        # 1: QoS not judged or not met
    assert validated, (seen, out)
    totals = [t for _, t in seen]
    assert totals == sorted(totals), totals        # a counter never goes down
    assert max(t for ph, t in seen if ph == 1) > 0, seen
    import json
    results = json.load(open(os.path.join(report, "results.json")))
    sent = sum(mtharness.loadgen_level_sums(results, i)[2]["msgs_local_sent"]
               for i in range(len(results["levels"])))
    assert 0 < totals[-1] <= sent, (totals[-1], sent)


if __name__ == "__main__":
    mtharness.main(test)
