#!/usr/bin/env python3
"""test-sec-auth-mmp.py -- mailtier-mmp's logins, as an attacker sees them
(real slapd, real mailtier-popstore shards, poplib and raw sockets).

- Default policy (allow_plaintext_auth = no): before STLS, CAPA lists
  neither USER nor SASL, and USER, PASS and AUTH PLAIN are refused with
  -ERR [AUTH] Plaintext authentication disallowed (RFC 2595 section 2.1,
  RFC 8314 section 5).
- Guessing is slowed per client address across connections: the n-th
  failure from one address is answered after auth_fail_delay * 2^(n-1)
  (300, 600, 1200 ms) while another address still gets the first delay.
- An unknown user and a wrong password get the same answer after the same
  time, even for a user whose password hash takes the directory hundreds
  of milliseconds (the delay runs from the PASS; a control login shows
  the hash is slow).
- auth_fail_limit holds for connections opened before the block (issue
  37 item 3): 100 connections from one address first, then one login on
  each, sent together (99 wrong passwords, the right one 97th), IMAP LOGIN
  and POP3 USER/PASS: the directory checks auth_fail_limit = 10 of them
  (mailtier_dirsvc_requests_total{kind="auth"}), the others wait for those
  and are then refused, the right one too, with the block's BYE / -ERR;
  logins sent after the block are refused at once.
- Every connection the MMP closes gets a last line saying why (item 8c):
  the logins still waiting out their failure delay at login_timeout get
  their answer and "the login time is over" (IMAP: NO, then BYE; POP3:
  one -ERR); at SIGTERM, a login waiting out its delay is answered and
  told the server is shutting down, not closed without a word at
  drain_timeout.
- No password (the users' or the proxy's store credential) appears in the
  MMP's, the stores' or slapd's logs, as typed or in base64."""

import base64
import poplib
import re
import selectors
import socket
import threading
import time
import urllib.request

import sec_setup
import mmp_setup
import mtharness

ALICE, SLOW = "alice@example.test", "slow@example.test"
PW = "alice-Secret-42"
SLOW_PW = "slow-Secret-43"
WRONG = ["Guess-%d-plugh" % i for i in range(8)]
# Issue 37 item 3: 100 connections, 99 wrong passwords, the right one 97th.
BURST, RIGHT_AT = 100, 96
BURST_WRONG = ["Burst-%d-xyzzy" % i for i in range(BURST + 2)]
BLOCK_BYE = {
    "imap": "* BYE [UNAVAILABLE] Too many failed logins from your address, "
            "try again later.",
    "pop3": "-ERR [SYS/TEMP] Too many failed logins from your address, "
            "try again later.",
}


def raw_lines(c, cmds):
    s = mmp_setup.raw(c.mmp_port)
    try:
        out = [mmp_setup.read_line(s)]
        for cmd in cmds:
            s.sendall(cmd.encode() + b"\r\n")
            line = mmp_setup.read_line(s)
            out.append(line)
            if cmd == "CAPA" and line.startswith("+OK"):
                while line != ".":
                    line = mmp_setup.read_line(s)
                    out[-1] += "\n" + line
        return out
    finally:
        s.close()


def check_pre_tls(c):
    greeting, capa, user, pw, auth, auth2 = raw_lines(c, [
        "CAPA", f"USER {ALICE}", f"PASS {PW}",
        "AUTH PLAIN " + base64.b64encode(f"\0{ALICE}\0{PW}".encode()).decode(),
        "AUTH PLAIN"])
    assert greeting.startswith("+OK"), greeting
    caps = capa.split("\n")
    assert "STLS" in caps and "USER" not in caps and \
        not any(l.startswith("SASL") for l in caps), caps
    for line in (user, pw, auth, auth2):
        assert line.startswith("-ERR [AUTH] Plaintext authentication "
                               "disallowed"), line


def attempt(c, source, user, password):
    """(answer, seconds from PASS to answer) over STLS from source."""
    p = c.pop3_tls(source=source, timeout=30)
    p.user(user)
    t0 = time.monotonic()
    try:
        answer = p.pass_(password)
    except poplib.error_proto as e:
        answer = e.args[0]
    took = time.monotonic() - t0
    try:
        p.quit()
    except (poplib.error_proto, OSError):
        pass
    return answer, took


def check_slowdown(c):
    times = []
    for i in range(3):
        answer, took = attempt(c, "127.0.0.3", ALICE, WRONG[i])
        assert answer == b"-ERR [AUTH] Authentication failed.", answer
        times.append(took)
    print("failures from 127.0.0.3:", ["%.2f" % t for t in times])
    for i, t in enumerate(times):
        want = 0.3 * 2 ** i
        assert want * 0.9 <= t <= want + 1.5, (i, times)
    answer, took = attempt(c, "127.0.0.4", ALICE, WRONG[3])
    assert answer.startswith(b"-ERR [AUTH]") and 0.27 <= took <= 1.3, took


def check_enumeration(c):
    answer, hash_time = attempt(c, "127.0.0.20", SLOW, SLOW_PW)
    assert answer.startswith(b"+OK"), answer
    print("directory + store time for SLOW's right password: %.3f s" % hash_time)
    results = {}
    for src, user in (("127.0.0.5", "nobody@example.test"), ("127.0.0.6", SLOW),
                      ("127.0.0.7", "nobody@nowhere.test"), ("127.0.0.8", ALICE),
                      ("127.0.0.9", "nobody")):
        results[user] = attempt(c, src, user, WRONG[4])
    print("first-failure answers:", {k: (v[0], "%.3f" % v[1])
                                     for k, v in results.items()})
    assert {a for a, _ in results.values()} == \
        {b"-ERR [AUTH] Authentication failed."}, results
    took = [t for _, t in results.values()]
    # 500,000 rounds (the most dirsvc accepts): ~0.18 s on an idle core
    assert hash_time > 0.1, "the control user's hash is not slow"
    assert max(took) - min(took) < min(0.25, max(0.1, hash_time * 0.6)), results


def metric(port, series):
    """A series' value on the MMP's metrics_listen, e.g.
    'mailtier_dirsvc_requests_total{kind="auth"}'."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                timeout=10) as r:
        text = r.read().decode()
    m = re.search("^" + re.escape(series) + r" (\S+)$", text, re.M)
    assert m, f"no {series} in the metrics"
    return int(float(m.group(1)))


def auth_checks(port):
    """How many password checks the MMP has asked of the directory."""
    return metric(port, 'mailtier_dirsvc_requests_total{kind="auth"}')


def blocks(port):
    """How many times an address has reached auth_fail_limit."""
    return metric(port, 'mailtier_address_blocks_total{table="client"}')


def login_bytes(proto, password):
    if proto == "imap":
        return f"a1 LOGIN {ALICE} {password}\r\n".encode()
    return f"USER {ALICE}\r\nPASS {password}\r\n".encode()


def read_to_eof(socks, t0, deadline):
    """{index: ([(seconds after t0, line)], closed)} for every socket, read
    until each is closed by the MMP or the deadline."""
    sel = selectors.DefaultSelector()
    got = {i: [] for i in socks}
    partial = {i: b"" for i in socks}
    closed = set()
    for i, s in socks.items():
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, i)
    while len(closed) < len(socks) and time.monotonic() < deadline:
        for key, _ in sel.select(0.5):
            i = key.data
            try:
                data = key.fileobj.recv(4096)
            except BlockingIOError:
                continue
            except ConnectionResetError:
                data = b""
            if not data:
                closed.add(i)
                sel.unregister(key.fileobj)
                continue
            partial[i] += data
            while b"\r\n" in partial[i]:
                line, partial[i] = partial[i].split(b"\r\n", 1)
                got[i].append((time.monotonic() - t0, line.decode()))
    sel.close()
    return {i: (got[i], i in closed) for i in socks}


def check_open_first(c, proto, source, metrics_port):
    """Issue 37 items 3 and 8c, in one protocol from one address: BURST + 2
    connections first; a login on each of BURST, sent together; once the
    address is blocked, a login (right, then wrong) on the last two."""
    port = c.mmp_imap_port if proto == "imap" else c.mmp_port
    socks, connected = {}, {}
    for i in range(BURST + 2):
        connected[i] = time.monotonic()
        s = mmp_setup.raw(port, source=source, timeout=20)
        assert mmp_setup.read_line(s).startswith(("* OK", "+OK"))
        socks[i] = s
    before, blocked_before = auth_checks(metrics_port), blocks(metrics_port)
    t0 = time.monotonic()
    for i in range(BURST):
        socks[i].sendall(login_bytes(proto, PW if i == RIGHT_AT else BURST_WRONG[i]))
    # The tenth failure blocks the address: every login after it is
    # refused before the directory is asked, on a connection opened
    # before the block too, the right password as well.
    sec_setup.wait_until(lambda: blocks(metrics_port) > blocked_before,
                         timeout=10, what=f"{source} blocked")
    for i, pw in ((BURST, PW), (BURST + 1, BURST_WRONG[BURST + 1])):
        socks[i].sendall(login_bytes(proto, pw))
    # login_timeout (6 s) ends every session this MMP still holds.
    out = read_to_eof(socks, t0, t0 + 20)
    checks = auth_checks(metrics_port) - before

    print(f"{proto} from {source}: {checks} directory checks; the right "
          f"password's connection: {out[RIGHT_AT]}")
    assert checks == 10, f"{proto}: {checks} passwords checked, " \
        "auth_fail_limit is 10"
    for i in (RIGHT_AT, BURST):
        assert [l for _, l in out[i][0] if l != "+OK"] == [BLOCK_BYE[proto]] and \
            out[i][1], f"{proto}: the right password on connection {i}: {out[i]}"
    final = {}
    for i, (lines, closed) in out.items():
        assert closed, f"{proto} connection {i} still open: {lines}"
        words = [l for l in lines if l[1] != "+OK"]     # USER's +OK
        assert words, f"{proto} connection {i} closed without a word"
        # 8c: the last line says why the MMP closes.
        last = words[-1][1]
        assert last.startswith("* BYE " if proto == "imap" else "-ERR"), \
            f"{proto} connection {i}: {lines}"
        final.setdefault(last, []).append(i)
    print(f"{proto}: last lines:", {k: len(v) for k, v in final.items()})
    refused = final.get(BLOCK_BYE[proto], [])
    assert len(refused) == BURST + 2 - 10, final
    assert RIGHT_AT in refused and BURST in refused, final
    for i in refused:
        words = [l for l in out[i][0] if l[1] != "+OK"]
        # Refused, and soon: no wait for a failure delay or login_timeout.
        assert len(words) == 1 and words[0][0] < 4, (i, words)
    # The sessions still waiting out their delay at login_timeout: the
    # answer, then why (8c); the tenth failure reached the limit.
    timed_out = {"imap": "* BYE The login time is over.",
                 "pop3": "-ERR [AUTH] Authentication failed; the login time "
                         "is over, closing the connection."}[proto]
    blocked = {"imap": "* BYE Too many failed logins.",
               "pop3": "-ERR [AUTH] Authentication failed; too many failed "
                       "logins from your address, closing the connection."}[proto]
    assert final.get(timed_out) and len(final.get(blocked, [])) == 1, final
    for i in final[timed_out] + final[blocked]:
        words = [l for l in out[i][0] if l[1] != "+OK"]
        assert words[0][1].startswith("a1 NO [AUTHENTICATIONFAILED]" if proto == "imap"
                                      else "-ERR [AUTH] Authentication failed"), words
        # At login_timeout (6 s from the connect), not before.
        assert t0 + words[-1][0] - connected[i] > 5.5, (i, words)
    for s in socks.values():
        s.close()


def check_drain(c):
    """8c: SIGTERM while logins wait out their failure delay (20 s, more
    than drain_timeout): they are answered and told why, at once."""
    socks = {}
    for i, port in enumerate((c.mmp_imap_port, c.mmp_port)):
        s = mmp_setup.raw(port, source="127.0.0.33", timeout=20)
        mmp_setup.read_line(s)
        s.sendall(login_bytes("imap" if i == 0 else "pop3", WRONG[5]))
        socks[i] = s
    sec_setup.wait_until(lambda: c.mmp.log().count("result=auth_failed ") >= 2,
                         timeout=10, what="two failed logins")
    t0 = time.monotonic()
    stopper = threading.Thread(target=c.mmp.stop, kwargs={"timeout": 20})
    stopper.start()
    out = read_to_eof(socks, t0, t0 + 15)
    stopper.join()
    imap, pop3 = out[0], out[1]
    print("at SIGTERM:", imap, pop3)
    assert imap[1] and [l for _, l in imap[0]] == [
        "a1 NO [AUTHENTICATIONFAILED] Authentication failed.",
        "* BYE [UNAVAILABLE] Server shutting down."], imap
    assert pop3[1] and [l for _, l in pop3[0]] == [
        "+OK", "-ERR [SYS/TEMP] Server shutting down."], pop3
    # At once, not when drain_timeout (5 s) closes what is left.
    assert imap[0][-1][0] < 3 and pop3[0][-1][0] < 3, out
    for s in socks.values():
        s.close()


def check_logs(c, h):
    secrets = {mmp_setup.PROXY_PASSWORD}
    for pw in WRONG + BURST_WRONG + [PW, SLOW_PW]:
        for user in (ALICE, SLOW, "nobody@example.test", "nobody@nowhere.test",
                     "nobody"):
            secrets |= sec_setup.secrets_forms(user, pw)
    # The proxy's PLAIN to the stores: authzid NUL proxy_user NUL secret.
    for user in (ALICE, SLOW):
        secrets.add(base64.b64encode(
            f"{user}\0mmp\0{mmp_setup.PROXY_PASSWORD}".encode()).decode())
    logs = {d.name: d.log() for d in h.daemons}
    logs.update(sec_setup.slapd_logs(c.ds))
    sec_setup.assert_not_logged(logs, secrets)


def test(h):
    c = mmp_setup.Cluster(h, users={ALICE: (PW, "s1"), SLOW: (SLOW_PW, "s2")},
                          mail={ALICE: ["Subject: a\r\n\r\nhi\r\n"]},
                          backend="popstore")
    sec_setup.set_slow_password(c.ds, SLOW, SLOW_PW)
    gl = {"log_level": "debug"}
    c.start_mmp(global_overrides=gl, auth_fail_delay="300ms",
                auth_fail_limit=20, auth_fail_window="1m")
    check_pre_tls(c)
    check_slowdown(c)
    # A successful login still works (and is relayed).
    p = c.login(ALICE, PW)
    assert p.stat()[0] == 1
    p.quit()
    c.start_mmp(global_overrides=gl, auth_fail_delay="2500ms",
                auth_fail_limit=20, auth_fail_window="1m")
    check_enumeration(c)
    # auth_fail_limit 10 (the default): plaintext logins so that 200 raw
    # sockets need no TLS; the limits do not depend on it.
    metrics_port = h.free_port()
    c.start_mmp(global_overrides=gl, auth_fail_delay="200ms",
                auth_fail_limit=10, auth_fail_window="1m", login_timeout="6s",
                conn_limit_per_client=BURST + 2, allow_plaintext_auth="yes",
                metrics_listen=f"127.0.0.1:{metrics_port}")
    check_open_first(c, "imap", "127.0.0.30", metrics_port)
    check_open_first(c, "pop3", "127.0.0.31", metrics_port)
    c.start_mmp(global_overrides=gl, auth_fail_delay="20s",
                allow_plaintext_auth="yes")
    check_drain(c)
    c.mmp = None
    check_logs(c, h)


if __name__ == "__main__":
    mtharness.main(test)
