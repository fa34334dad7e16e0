#!/usr/bin/env python3
"""test-loadgen-imap.py -- `mailtier-load` speaking IMAP (issue #16) to a
real mailtier-popstore with its own slapd (popstorelib), on free loopback
ports, with no MTA or MMP in between:

  - `fill --protocol imap --lmtp ... --imap ...`: INBOX by LMTP (the
    SPECmail2001 distribution x10) and the folder model by IMAP CREATE /
    APPEND; afterwards every user has INBOX, Sent, Drafts, Trash, Junk and
    Folder1-5 (imaplib's LIST), and the messages in them (STATUS) are the
    ones fill says it put there;
  - a short bounded `run --protocol imap --imap 127.0.0.1:<store imap>`
    (SMTP to `mailtier-load sink`, messages delivered by LMTP during the
    run so IDLE-ing desktop clients wake): the IMAP rows of results.json
    have attempts, every attempt passed (the desktop replies' submissions
    to --smtp without AUTH too: one smtp_submit_connect per
    imap-reply-submit session), no session failed, no error of any kind,
    and the text report shows the IMAP rows;
  - the same run with --tls (STARTTLS before every login: one
    imap_starttls per session; and in every SMTP session and submission,
    against a small STARTTLS SMTP server here with the store's
    certificate: one smtp_starttls per SMTP session, every connection it
    took went TLS before MAIL) and with --imaps on the store's
    imaps_listen (implicit TLS);
  - `run --protocol imap` without --imap is a usage error (exit 2).

For debugging, LG_WRAP (a wrapper such as "gdb -batch -ex run -ex bt
--args") and LG_RUN_ARGS (more flags, e.g. "-v -v") apply to the runs.

Trust boundary: test code; everything listens on 127.0.0.1."""

import json
import os
import re
import socket
import ssl
import subprocess
import threading
import time

import mtharness
import popstorelib

D = popstorelib.DOMAIN
USERS = 6
FOLDERS = ["Sent", "Drafts", "Trash", "Junk",
           "Folder1", "Folder2", "Folder3", "Folder4", "Folder5"]


def load(*args, timeout=180, wrap=""):
    argv = wrap.split() + [mtharness.binary("loadgen/mailtier-load"), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def status_messages(c, mailbox):
    typ, data = c.status(mailbox, "(MESSAGES)")
    assert typ == "OK", (mailbox, typ, data)
    return int(re.search(rb"MESSAGES (\d+)", data[0]).group(1))


def test_fill(env):
    p = env.ports["s1"]
    r = load("fill", "--lmtp", f"127.0.0.1:{p['lmtp']}", "--users", str(USERS),
             "--domain", D, "--protocol", "imap", "--imap", f"127.0.0.1:{p['imap']}",
             "--seed", "3", "--progress", "0", "--concurrency", "4")
    print(r.stdout, r.stderr)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    inbox = re.search(r"messages planned (\d+), accepted (\d+), failed 0", r.stdout)
    folders = re.search(r"folders by IMAP .*: users (\d+) \(failed 0\), messages "
                        r"planned (\d+), appended (\d+)", r.stdout)
    assert inbox and folders, r.stdout
    assert inbox.group(1) == inbox.group(2)
    assert int(folders.group(1)) == USERS
    assert folders.group(2) == folders.group(3)
    in_inbox = in_folders = 0
    for k in range(1, USERS + 1):
        with env.imap("s1", f"user{k}@{D}", f"secret{k}") as c:
            typ, lines = c.list()
            assert typ == "OK"
            names = {l.decode().rsplit(" ", 1)[1].strip('"') for l in lines}
            for folder in ["INBOX"] + FOLDERS:
                assert folder in names, (k, folder, names)
            n_inbox = status_messages(c, "INBOX")
            in_inbox += n_inbox
            # Steady state: the old mail has been read, so the desktop
            # clients go on to IDLE and wake for what arrives in the run.
            typ, _ = c.select("INBOX")
            assert typ == "OK"
            if n_inbox > 0:
                typ, _ = c.store("1:*", "+FLAGS.SILENT", "(\\Seen)")
                assert typ == "OK"
            in_folders += sum(status_messages(c, f) for f in FOLDERS)
            c.logout()
    assert in_inbox == int(inbox.group(2)), (in_inbox, inbox.group(2))
    assert in_folders == int(folders.group(3)), (in_folders, folders.group(3))
    # The x10 INBOX: on average 33 messages a user (the seed's, not luck:
    # 6 users of mean 33.4 give far more than the 3.34 of a POP fill).
    assert in_inbox > 5 * USERS, in_inbox


class StarttlsSink:
    """A small SMTP server that offers STARTTLS (RFC 3207) with a given
    certificate and takes every message: the SMTP side of a `--tls` run
    without an MTA. Counts sessions (connections that said EHLO: not the
    test's own wait for the port), those that went TLS, messages and MAIL
    commands before TLS. Bounded: 30 s socket timeouts, daemon threads."""

    def __init__(self, cert, key):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.lock = threading.Lock()
        self.counts = {"sessions": 0, "tls": 0, "messages": 0, "plain_mail": 0}
        threading.Thread(target=self._accept, daemon=True).start()

    def _count(self, key):
        with self.lock:
            self.counts[key] += 1

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        conn.settimeout(30)
        buf, tls, greeted = b"", False, False

        def line():
            nonlocal buf
            while b"\n" not in buf:
                chunk = conn.recv(65536)
                if not chunk:
                    raise EOFError
                buf += chunk
            text, buf = buf.split(b"\n", 1)
            return text.rstrip(b"\r")
        try:
            conn.sendall(b"220 tls-sink ESMTP\r\n")
            while True:
                verb = line().split(b" ", 1)[0].upper()
                if verb == b"EHLO":
                    if not greeted:
                        greeted = True
                        self._count("sessions")
                    conn.sendall(b"250-tls-sink\r\n" + (b"" if tls else b"250-STARTTLS\r\n") +
                                 b"250 8BITMIME\r\n")
                elif verb == b"STARTTLS" and not tls and not buf:
                    conn.sendall(b"220 2.0.0 go ahead\r\n")
                    conn = self.ctx.wrap_socket(conn, server_side=True)
                    tls = True
                    self._count("tls")
                elif verb == b"MAIL":
                    if not tls:
                        self._count("plain_mail")
                    conn.sendall(b"250 ok\r\n")
                elif verb in (b"RCPT", b"RSET", b"NOOP"):
                    conn.sendall(b"250 ok\r\n")
                elif verb == b"DATA":
                    conn.sendall(b"354 go\r\n")
                    while line() != b".":
                        pass
                    self._count("messages")
                    conn.sendall(b"250 queued\r\n")
                elif verb == b"QUIT":
                    conn.sendall(b"221 bye\r\n")
                    return
                else:
                    conn.sendall(b"502 5.5.2 no\r\n")
        except (EOFError, OSError):
            pass
        finally:
            conn.close()

    def close(self):
        self.sock.close()


def deliver_while(env, stop):
    """A message to some user every 0.3 s, so IDLE-ing clients wake."""
    n = 0
    while not stop.is_set():
        n += 1
        k = 1 + n % USERS
        env.deliver("s1", "someone@remote.test", [f"user{k}@{D}"],
                    popstorelib.message(f"during the run {n}", "Hello.\r\n"))
        stop.wait(0.3)


def imap_run(env, h, name, port, extra=(), duration="8", expect=(), smtp_sink=None,
             seed="5"):
    """A `run --protocol imap` against port (SMTP to a sink, or to smtp_sink
    when given; LMTP deliveries meanwhile); every IMAP row in expect
    attempted, every IMAP and SMTP attempt passed, no session failed, no
    error. The rows' totals and the session counts by kind."""
    if smtp_sink is not None:
        sink, sink_port = None, smtp_sink.port
    else:
        sink_port, = h.free_ports(1)
        sink = subprocess.Popen([mtharness.binary("loadgen/mailtier-load"), "sink",
                                 "--listen", f"127.0.0.1:{sink_port}", "--duration", "120",
                                 "--quiet"], stdout=subprocess.DEVNULL)
    report = os.path.join(h.tmpdir, "report-" + name)
    stop = threading.Event()
    feeder = threading.Thread(target=deliver_while, args=(env, stop))
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", sink_port), 1).close()
                break
            except OSError:
                time.sleep(0.05)
        feeder.start()
        # 19 msgs/min = the load of 3,800 users: about 5 IMAP sessions/s
        # (4.8 per user per hour) on the 6 mailboxes.
        r = load("run", "--protocol", "imap", "--imap", f"127.0.0.1:{port}", *extra,
                 "--smtp", f"127.0.0.1:{sink_port}", "--users", str(USERS),
                 "--rate", "19", "--domain", D, "--levels", "100",
                 "--warmup", "1", "--duration", duration, "--cooldown", "15",
                 "--step-timeout", "10", "--probe-interval", "0",
                 "--progress", "0", "--seed", seed, "--report", report,
                 *os.environ.get("LG_RUN_ARGS", "").split(),
                 wrap=os.environ.get("LG_WRAP", ""))
    finally:
        stop.set()
        if feeder.is_alive():
            feeder.join(10)
        if sink is not None:
            sink.terminate()
            sink.wait(10)
    print(name, r.stdout[-6000:], r.stderr[-3000:])
    # QoS may be "not judged" with this few attempts: 0 or 1, never 2.
    assert r.returncode in (0, 1), (name, r.returncode, r.stderr)
    assert "IMAP Login" in r.stdout and "IMAP Fetch body" in r.stdout
    results = json.load(open(os.path.join(report, "results.json")))
    fns, kinds, _, errors = mtharness.loadgen_level_sums(results)
    assert all(v == 0 for v in errors.values()), (name, errors)
    assert all(k["failed"] == 0 for k in kinds.values()), (name, kinds)
    for kind in ("pop-first", "pop-repeat"):
        assert kinds[kind]["attempted"] == 0, (name, kind, kinds[kind])
    kinds = {kind: k["attempted"] for kind, k in kinds.items()}
    sessions = kinds["imap-desktop"] + kinds["imap-webmail"]
    for key in expect:
        assert fns[key]["attempts"] > 0, (name, key, fns[key])
    for key, f in fns.items():
        if key.startswith("imap_") or key.startswith("smtp_"):
            assert f["pass"] == f["attempts"], (name, key, f)
    assert fns["imap_connect"]["attempts"] == sessions
    assert fns["pop_connect"]["attempts"] == 0
    # Desktop replies, submitted to --smtp without AUTH (no --submission).
    assert fns["smtp_submit_connect"]["attempts"] == kinds["imap-reply-submit"], (name, kinds)
    assert fns["smtp_submit_auth"]["attempts"] == 0, (name, fns["smtp_submit_auth"])
    return sessions, fns, kinds


def test_run(env, h):
    sessions, fns, _ = imap_run(env, h, "plain", env.ports["s1"]["imap"], expect=(
        "imap_connect", "imap_login", "imap_list", "imap_select",
        "imap_fetch_headers", "imap_fetch_body", "imap_store",
        "imap_idle", "imap_idle_wake", "imap_logout"))
    assert sessions >= 20, sessions
    assert fns["imap_starttls"]["attempts"] == 0
    assert fns["smtp_starttls"]["attempts"] == 0


def test_tls(env, h):
    """--tls: STARTTLS on the IMAP port before every login, and in every
    SMTP session and reply submission (RFC 3207, to a STARTTLS server
    here); --imaps: implicit TLS on the store's imaps_listen."""
    smtp = StarttlsSink(env.cert, env.key)
    try:
        # Seed 7 makes 6 SMTP sessions in these 5 s (seed 5: none).
        sessions, fns, kinds = imap_run(env, h, "starttls", env.ports["s1"]["imap"],
                                        extra=("--tls",), duration="4", seed="7",
                                        smtp_sink=smtp,
                                        expect=("imap_starttls", "imap_login", "imap_select",
                                                "smtp_starttls"))
    finally:
        smtp.close()
    assert fns["imap_starttls"]["attempts"] == sessions, (sessions, fns["imap_starttls"])
    smtp_sessions = kinds["smtp-local"] + kinds["smtp-remote"]
    assert fns["smtp_starttls"]["attempts"] == smtp_sessions > 0, (kinds, fns["smtp_starttls"])
    assert fns["smtp_ehlo"]["attempts"] == 2 * smtp_sessions, fns["smtp_ehlo"]
    assert fns["smtp_submit_starttls"]["attempts"] == kinds["imap-reply-submit"], kinds
    # Every connection the server took went TLS before any MAIL.
    counts = smtp.counts
    assert counts["sessions"] == smtp_sessions + kinds["imap-reply-submit"], (counts, kinds)
    assert counts["tls"] == counts["sessions"] and counts["plain_mail"] == 0, counts
    sessions, fns, _ = imap_run(env, h, "implicit", env.ports["s1"]["imaps"],
                                extra=("--imaps",), duration="3",
                                expect=("imap_login", "imap_select", "imap_logout"))
    assert fns["imap_starttls"]["attempts"] == 0
    assert fns["smtp_starttls"]["attempts"] == 0


def test_usage(env):
    r = load("run", "--protocol", "imap", "--smtp", "127.0.0.1:1", "--users", "1")
    assert r.returncode == 2 and "--imap is required" in r.stderr, (r.returncode, r.stderr)
    r = load("run", "--protocol", "smtp", "--smtp", "127.0.0.1:1", "--users", "1")
    assert r.returncode == 2 and "not pop, imap or mixed" in r.stderr, r.stderr


def test(h):
    try:
        mtharness.binary("popstore/mailtier-popstore")
    except mtharness.HarnessError:
        raise mtharness.Skip("mailtier-popstore is not built")
    env = popstorelib.Env(h, shards=("s1",), tls=True)
    for k in range(1, USERS + 1):
        env.add_user(f"user{k}@{D}", f"secret{k}", shard="s1")
    env.start("s1")
    test_usage(env)
    test_fill(env)
    test_run(env, h)
    test_tls(env, h)


if __name__ == "__main__":
    mtharness.main(test)
