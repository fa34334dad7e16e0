#!/usr/bin/env python3
"""test-sec-tls-mmp.py -- TLS of mailtier-mmp (995 implicit TLS, STLS on
110), against real mailtier-popstore shards.

- Only TLS 1.2 and 1.3: TLS 1.0/1.1 handshakes fail (the same client
  speaks them to an openssl s_server that allows them: control).
- No compression; no renegotiation (openssl s_client -tls1_2, "R").
- SIGHUP reloads certificate and key without dropping sessions: a
  logged-in POP3S session and an STLS session before login keep working
  across the reload; new sessions (995 and STLS) get the new certificate.
RFCs: 8314, 2595, 9325."""

import poplib

import sec_setup
import mmp_setup
import mtharness

ALICE, PW = "alice@example.test", "alice-Secret-42"


def pop3s(c):
    return poplib.POP3_SSL("127.0.0.1", c.mmps_port,
                           context=sec_setup.tls_client_context(), timeout=15)


def test(h):
    c = mmp_setup.Cluster(h, users={ALICE: (PW, "s1")},
                          mail={ALICE: ["Subject: a\r\n\r\nhi\r\n"]},
                          backend="popstore")
    c.start_mmp()
    sec_setup.legacy_control(h, c.cert, c.key)
    for port, starttls in ((c.mmps_port, None), (c.mmp_port, "pop3")):
        sec_setup.check_tls_versions(port, starttls)
        sec_setup.check_renegotiation(port, starttls, probe=b"CAPA\r\n",
                                      answer=b"+OK")

    old = sec_setup.cert_der(c.cert)
    logged_in = pop3s(c)
    logged_in.user(ALICE)
    logged_in.pass_(PW)
    assert logged_in.stat()[0] == 1
    assert logged_in.sock.getpeercert(binary_form=True) == old
    waiting = poplib.POP3("127.0.0.1", c.mmp_port, timeout=15)
    waiting.stls(context=sec_setup.tls_client_context())

    new = sec_setup.new_cert(c.dir, c.cert, c.key, "reloaded.test")
    assert new != old
    c.mmp.reload()
    c.mmp.wait_log(r"reload: TLS certificate and key reloaded")

    # Both sessions go on.
    assert logged_in.stat()[0] == 1
    assert b"hi" in b"\n".join(logged_in.retr(1)[1])
    logged_in.quit()
    waiting.user(ALICE)
    waiting.pass_(PW)
    assert waiting.stat()[0] == 1
    waiting.quit()
    # New sessions see the new certificate.
    for port, starttls in ((c.mmps_port, None), (c.mmp_port, "pop3")):
        s = sec_setup.tls_connect(port, starttls)
        assert s.getpeercert(binary_form=True) == new, port
        s.close()
    p = pop3s(c)
    p.user(ALICE)
    p.pass_(PW)
    assert p.stat()[0] == 1
    p.quit()
    c.mmp.stop()


if __name__ == "__main__":
    mtharness.main(test)
