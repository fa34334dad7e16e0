#!/usr/bin/env python3
"""test-sec-tls-mta.py -- TLS of mailtier-mta (465 implicit TLS, STARTTLS
on 587 and 25) and of mailtier-popstore's POP3S listener.

- Only TLS 1.2 and 1.3: a client pinned to TLS 1.0 or 1.1 (with the old
  ciphers allowed, SECLEVEL=0) fails its handshake; the same client
  succeeds against an openssl s_server that allows them (control).
- No compression (Python's ssl and openssl s_client say none).
- No renegotiation: openssl s_client -tls1_2, then "R", fails, and the
  command sent after it is not answered.
- SIGHUP reloads certificate and key without dropping sessions: a TLS
  session opened before the reload (465, and 587 after STARTTLS and AUTH)
  keeps working across it and sends a message; a new session sees the new
  certificate. The same for popstore's POP3S (a logged-in session goes on;
  new sessions get the new certificate).
RFCs: 8314 (implicit TLS), 3207 (STARTTLS), 9325 (TLS 1.2+, no
compression, no renegotiation), 2595 (POP3 STLS)."""

import base64
import poplib
import smtplib

import sec_setup
import mta_setup
import mtharness

ALICE = "alice@example.test"


def add_popstore_pop3s(env, port):
    with open(env.conf) as f:
        text = f.read()
    text = text.replace("[popstore.s1]\n",
                        f"[popstore.s1]\npop3s_listen = 127.0.0.1:{port}\n")
    with open(env.conf, "w") as f:
        f.write(text)


def smtp_cmd(sock, cmd):
    sock.sendall(cmd.encode() + b"\r\n")
    data = b""
    while True:
        chunk = sock.recv(4096)
        assert chunk, f"closed after {cmd!r}"
        data += chunk
        lines = data.split(b"\r\n")
        if len(lines) >= 2 and lines[-2][3:4] == b" ":
            return data


def check_reload(h, env, pop3s_port, stores):
    old = sec_setup.cert_der(env.cert)
    # Sessions opened before the reload.
    a = sec_setup.tls_connect(env.submissions_port)
    assert a.recv(4096).startswith(b"220")
    assert b"250" in smtp_cmd(a, "EHLO before.test")
    assert a.getpeercert(binary_form=True) == old
    b = smtplib.SMTP("127.0.0.1", env.submission_port, timeout=15)
    b.starttls(context=sec_setup.tls_client_context())
    b.login(ALICE, mta_setup.PASSWORD)
    p = poplib.POP3_SSL("127.0.0.1", pop3s_port,
                        context=sec_setup.tls_client_context(), timeout=15)
    p.user(ALICE)
    p.pass_(mta_setup.PASSWORD)
    n_before = p.stat()[0]

    new = sec_setup.new_cert(env.dir, env.cert, env.key, "reloaded.test")
    assert new != old
    env.mta.reload()
    env.mta.wait_log(r"reload: done")
    for d in stores.values():
        d.reload()
    stores["s1"].wait_log(r"reload: TLS certificate and key reloaded")

    # The old sessions go on, on their old certificate.
    assert b"250" in smtp_cmd(a, "NOOP")
    assert smtp_cmd(a, "EHLO after.test").startswith(b"250")
    b.sendmail(ALICE, [ALICE], "Subject: across the reload\r\n\r\nstill here\r\n")
    b.quit()
    assert p.stat()[0] == n_before
    assert p.noop().startswith(b"+OK")
    p.quit()
    a.close()
    # New sessions get the new certificate, on every listener.
    for port, starttls in ((env.submissions_port, None),
                           (env.submission_port, "smtp"),
                           (env.smtp_port, "smtp"), (pop3s_port, None)):
        s = sec_setup.tls_connect(port, starttls)
        assert s.getpeercert(binary_form=True) == new, (port, "old cert")
        s.close()
    # The message sent across the reload arrived.
    def arrived():
        q = poplib.POP3_SSL("127.0.0.1", pop3s_port,
                            context=sec_setup.tls_client_context(), timeout=15)
        q.user(ALICE)
        q.pass_(mta_setup.PASSWORD)
        n = q.stat()[0]
        q.quit()
        return n > n_before
    sec_setup.wait_until(arrived, what="the message sent across the reload")


def test(h):
    env = mta_setup.MtaEnv(h, users={ALICE: "s1"}, popstore=True)
    pop3s_port = h.free_port()
    add_popstore_pop3s(env, pop3s_port)
    stores = env.start_popstores()
    env.start_mta()
    sec_setup.legacy_control(h, env.cert, env.key)
    for port, starttls in ((env.submissions_port, None),
                           (env.submission_port, "smtp"),
                           (env.smtp_port, "smtp"), (pop3s_port, None)):
        sec_setup.check_tls_versions(port, starttls)
    sec_setup.check_renegotiation(env.submissions_port)
    sec_setup.check_renegotiation(env.submission_port, "smtp")
    sec_setup.check_renegotiation(env.smtp_port, "smtp")
    sec_setup.check_renegotiation(pop3s_port, probe=b"CAPA\r\n",
                                  answer=b"+OK")
    check_reload(h, env, pop3s_port, stores)
    env.mta.stop()


if __name__ == "__main__":
    mtharness.main(test)
