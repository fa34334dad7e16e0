#!/usr/bin/env python3
"""test-sec-auth-mta.py -- mailtier-mta's AUTH, as an attacker sees it.

- Plaintext mechanisms are neither offered nor accepted before TLS: EHLO on
  25 and 587 has no AUTH keyword; AUTH PLAIN/LOGIN before STARTTLS gets
  538 5.7.11 on 25 and 530 5.7.0 on 587 (RFC 4954 4, RFC 3207 4).
- Password guessing is slowed per client address across connections: the
  n-th failure from one address is answered after auth_fail_delay *
  2^(n-1) (here 400 ms, 800 ms, 1.6 s), while another address still gets
  the first delay.
- A failed login does not tell whether the user exists: an unknown user
  and a known user with a wrong password (PLAIN and LOGIN) get the same
  535 text after the same delay.
- No password is ever logged (log_level = debug), in any form: as typed,
  as PLAIN or LOGIN base64, in the MTA's log or slapd's.
RFCs: 4954 (SMTP AUTH), 4616 (PLAIN), 3207 (STARTTLS)."""

import base64
import smtplib
import time

import sec_setup
import mta_setup
import mtharness

ALICE = "alice@example.test"
SLOW = "slow@example.test"     # a password hash with 400,000 rounds
WRONG = ["Wr0ng-Guess-%d-xyzzy" % i for i in range(8)]
DELAY = 0.4


def b64(s):
    return base64.b64encode(s.encode()).decode()


def check_pre_tls(env):
    for port, want in ((env.smtp_port, (538, "538 5.7.11")),
                       (env.submission_port, (530, "530 5.7.0"))):
        r = sec_setup.Raw(port)
        code, text = r.cmd("EHLO client.test")
        assert code == 250 and "AUTH" not in text, (port, text)
        for cmd in ("AUTH PLAIN " + b64(f"\0{ALICE}\0{mta_setup.PASSWORD}"),
                    "AUTH LOGIN", "AUTH LOGIN " + b64(ALICE), "AUTH PLAIN"):
            code, text = r.cmd(cmd)
            assert code == want[0] and text.startswith(want[1]), (port, cmd, text)
        # Still not authenticated: no relay, no submission.
        assert r.cmd("MAIL FROM:<a@example.test>")[0] in (250, 530)
        code, text = r.cmd("RCPT TO:<victim@remote.test>")
        assert code >= 500, text
        r.close()


class Tls:
    """An SMTP session on 587 after STARTTLS, from source."""

    def __init__(self, env, source):
        self.r = sec_setup.Raw(env.submission_port, source=source)
        self.r.cmd("EHLO client.test")
        assert self.r.cmd("STARTTLS")[0] == 220
        self.r.sock = env.client_tls_context().wrap_socket(
            self.r.sock, server_hostname="localhost")
        code, text = self.r.cmd("EHLO client.test")
        assert "AUTH PLAIN LOGIN" in text, text

    def plain(self, user, password):
        t0 = time.monotonic()
        reply = self.r.cmd("AUTH PLAIN " + b64(f"\0{user}\0{password}"))
        return reply, time.monotonic() - t0

    def login(self, user, password):
        assert self.r.cmd("AUTH LOGIN")[0] == 334
        assert self.r.cmd(b64(user))[0] == 334
        t0 = time.monotonic()
        reply = self.r.cmd(b64(password))
        return reply, time.monotonic() - t0

    def close(self):
        self.r.close()


def check_slowdown(env):
    times = []
    for i in range(3):
        s = Tls(env, "127.0.0.3")
        (code, text), took = s.plain(ALICE, WRONG[i])
        assert code == 535, text
        times.append(took)
        s.close()
    print("failures from 127.0.0.3:", ["%.2f" % t for t in times])
    for i, t in enumerate(times):
        want = DELAY * 2 ** i
        assert want * 0.9 <= t <= want + 1.5, (i, t, times)
    # Another address is not slowed by the first one's failures.
    s = Tls(env, "127.0.0.4")
    (code, _), took = s.plain(ALICE, WRONG[3])
    assert code == 535 and DELAY * 0.9 <= took <= DELAY + 1.0, took
    s.close()


def check_enumeration(env):
    """Unknown user and wrong password: same text, same delay (distinct
    fresh addresses, so each is a first failure). SLOW's password hash
    takes the directory hundreds of milliseconds (a control below shows
    it): unless the delay runs from the AUTH rather than from the
    directory's answer, that time shows."""
    s = Tls(env, "127.0.0.20")
    (code, text), hash_time = s.plain(SLOW, mta_setup.PASSWORD)
    assert code == 235, text
    s.close()
    print("directory time for SLOW's right password: %.3f s" % hash_time)
    # 500,000 rounds (the most dirsvc accepts): ~0.18 s on an idle core
    assert hash_time > 0.1, "the control user's hash is not slow"
    results = {}
    for src, user, how in (("127.0.0.5", "nobody@example.test", "plain"),
                           ("127.0.0.6", SLOW, "plain"),
                           ("127.0.0.7", "nobody@example.test", "login"),
                           ("127.0.0.8", SLOW, "login"),
                           ("127.0.0.9", "nobody@nowhere.test", "plain"),
                           ("127.0.0.12", ALICE, "plain")):
        s = Tls(env, src)
        (code, text), took = getattr(s, how)(user, WRONG[4])
        s.close()
        results[(user, how)] = (text, took)
    texts = {t for t, _ in results.values()}
    assert texts == {"535 5.7.8 Authentication credentials invalid"}, results
    took = [t for _, t in results.values()]
    print("first-failure delays:", {k: "%.3f" % v[1] for k, v in results.items()})
    assert max(took) - min(took) < min(0.25, max(0.1, hash_time * 0.6)), results


def check_success_and_logs(env):
    s = Tls(env, "127.0.0.10")
    (code, text), _ = s.login(ALICE, mta_setup.PASSWORD)
    assert code == 235, text
    s.close()
    s = Tls(env, "127.0.0.11")
    (code, text), _ = s.plain(ALICE, mta_setup.PASSWORD)
    assert code == 235, text
    s.close()
    with smtplib.SMTP("127.0.0.1", env.submission_port, timeout=15) as c:
        c.starttls(context=env.client_tls_context())
        c.login(ALICE, mta_setup.PASSWORD)
    env.mta.wait_log(r"auth ok user=alice@example.test")
    secrets = set()
    for pw in WRONG + [mta_setup.PASSWORD]:
        for user in (ALICE, SLOW, "nobody@example.test", "nobody@nowhere.test"):
            secrets |= sec_setup.secrets_forms(user, pw)
    logs = {"mta": env.mta.log()}
    logs.update(sec_setup.slapd_logs(env.ds))
    sec_setup.assert_not_logged(logs, secrets)
    assert "auth failed from" in logs["mta"]


def write_config(env):
    env.write_config()
    with open(env.conf) as f:
        text = f.read()
    with open(env.conf, "w") as f:
        f.write(text.replace("log_level = info", "log_level = debug"))


def test(h):
    env = mta_setup.MtaEnv(h, users={ALICE: "s1", SLOW: "s1"}, mta_options={
        "auth_fail_delay": "400ms", "auth_fail_window": "1m",
        "max_errors": "50"})
    sec_setup.set_slow_password(env.ds, SLOW, mta_setup.PASSWORD)
    write_config(env)
    env.start_mta()
    check_pre_tls(env)
    check_slowdown(env)
    # Longer than SLOW's password check, as the default (2s) is.
    env.options["auth_fail_delay"] = "2500ms"
    write_config(env)
    env.mta.reload()
    check_enumeration(env)
    check_success_and_logs(env)
    env.mta.stop()


if __name__ == "__main__":
    mtharness.main(test)
