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
- No password (the users' or the proxy's store credential) appears in the
  MMP's, the stores' or slapd's logs, as typed or in base64."""

import base64
import poplib
import socket
import time

import sec_setup
import mmp_setup
import mtharness

ALICE, SLOW = "alice@example.test", "slow@example.test"
PW = "alice-Secret-42"
SLOW_PW = "slow-Secret-43"
WRONG = ["Guess-%d-plugh" % i for i in range(8)]


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


def check_logs(c, h):
    secrets = {mmp_setup.PROXY_PASSWORD}
    for pw in WRONG + [PW, SLOW_PW]:
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
    check_logs(c, h)
    c.mmp.stop()


if __name__ == "__main__":
    mtharness.main(test)
