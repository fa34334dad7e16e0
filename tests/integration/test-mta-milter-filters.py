#!/usr/bin/env python3
"""test-mta-milter-filters.py -- mailtier-mta with real mail filters
(#17): Debian's rspamd (its proxy worker in milter mode) on the SMTP
listener and OpenDKIM on both listeners, both resolving through a real
DNS server (unbound) that serves the test zones (filters.py): SPF, DKIM
keys and DMARC policies of good.test, reject.test and example.test.
Everything on loopback; nothing leaves the machine.

Inbound on port 25 through rspamd:
  - GTUBE is refused with rspamd's own reply (5xx 5.7.1), nothing queued;
  - From reject.test (DMARC p=reject; SPF fails for 127.0.0.1, no DKIM
    signature) is refused 5xx 5.7.1;
  - a clean message from good.test, DKIM-signed with good.test's key, is
    stored with an Authentication-Results header (RFC 8601) that says
    spf=pass, dkim=pass and dmarc=pass.
Submission on 587 (STARTTLS, AUTH) through OpenDKIM:
  - the copy the remote sink stores carries a DKIM-Signature of
    example.test that verifies (rspamd verifies it against the DNS key:
    no string compare), and fails once the body is altered;
  - mail from an unauthenticated client (relayed from mynetworks on
    port 25, where OpenDKIM also runs) is not signed."""

import email.utils
import re
import smtplib
import time

import filters
import lmtpd
import mta_setup
import mtharness

ALICE = "alice@example.test"
GTUBE = "XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X"


def message(sender, to, subject, body="Hello there.\r\n"):
    return (f"From: <{sender}>\r\nTo: <{to}>\r\nSubject: {subject}\r\n"
            f"Date: {email.utils.formatdate()}\r\n"
            f"Message-ID: <{subject.replace(' ', '-')}@test>\r\n\r\n{body}").encode()


def split_message(data):
    head, _, body = data.partition(b"\r\n\r\n")
    return head.decode("latin-1"), body


def field(head, name):
    """The unfolded values of the fields called name."""
    out, cur = [], None
    for line in head.split("\r\n"):
        if line[:1] in (" ", "\t") and cur is not None:
            out[-1] += " " + line.strip()
        elif line.lower().startswith(name.lower() + ":"):
            out.append(line.split(":", 1)[1].strip())
            cur = True
        else:
            cur = None
    return out


def refused(env, sender, msg, port=None):
    try:
        with env.smtp(port=port) as s:
            s.sendmail(sender, [ALICE], msg)
    except smtplib.SMTPDataError as e:
        return e.smtp_code, e.smtp_error.decode()
    raise AssertionError("accepted")


def check_inbound(h, env, dns, spam):
    # GTUBE: rspamd's own words.
    code, text = refused(env, "someone@good.test",
                         message("someone@good.test", ALICE, "gtube", GTUBE + "\r\n"))
    assert code in (550, 554) and text.startswith("5.7.1"), (code, text)
    env.mta.wait_log(r"milter=rspamd reject at end of message")
    # DMARC p=reject, SPF fails, no signature.
    code, text = refused(env, "someone@reject.test",
                         message("someone@reject.test", ALICE, "dmarc reject"))
    assert code in (550, 554) and text.startswith("5.7.1"), (code, text)
    time.sleep(1)
    assert not env.shards["s1"].messages, "a refused message was stored"
    assert "000" not in h.ctl("queue", "list", config=env.conf).stdout
    # A clean, signed one: stored with Authentication-Results.
    signed = filters.sign_message(dns.keys["good.test"],
                                  message("someone@good.test", ALICE, "clean one"))
    with env.smtp() as s:
        s.sendmail("someone@good.test", [ALICE], signed)
    got = env.shards["s1"].wait_messages(1)[0]
    head, body = split_message(got.data)
    # rspamd's (OpenDKIM, verifying on port 25 too, adds its own dkim one).
    results = [r for r in field(head, "Authentication-Results") if "spf=" in r]
    assert len(results) == 1, head
    ar = results[0]
    for want in ("spf=pass", "dkim=pass", "dmarc=pass"):
        assert want in ar, (want, ar)
    assert body == b"Hello there.\r\n", body
    assert field(head, "X-Spamd-Result"), head
    h.note(f"stored Authentication-Results: {ar}")


def check_submission(h, env, spam, remote):
    with env.smtp(port=env.submission_port) as s:
        s.starttls(context=env.client_tls_context())
        s.login(ALICE, mta_setup.PASSWORD)
        s.sendmail(ALICE, ["friend@remote.test"],
                   message(ALICE, "friend@remote.test", "signed by us"))
    got = remote.wait_messages(1)[0]
    head, _ = split_message(got.data)
    sigs = field(head, "DKIM-Signature")
    assert len(sigs) == 1 and "d=example.test" in sigs[0] and "s=mt" in sigs[0], head
    # Verified against the key in DNS by a real verifier.
    v = filters.verify_dkim(spam, got.data)
    assert v.result == "pass" and v.domains == ["example.test"], v
    v = filters.verify_dkim(spam, got.data.replace(b"Hello there", b"Hello where"))
    assert v.result == "fail", v
    # Not authenticated (relayed from mynetworks on port 25): not signed.
    with env.smtp() as s:
        s.sendmail(ALICE, ["friend@remote.test"],
                   message(ALICE, "friend@remote.test", "not signed"))
    got = remote.wait_messages(2)[1]
    head, _ = split_message(got.data)
    assert "Subject: not signed" in head and not field(head, "DKIM-Signature"), head


def test(h):
    filters.require("unbound", "rspamd", "rspamc", "opendkim", "opendkim-testmsg")
    remote = lmtpd.MailSink(lmtp=False, name="remote").start()
    env = mta_setup.MtaEnv(h, mta_options={
        "relayhost": f"127.0.0.1:{remote.port}",
        "mynetworks": "127.0.0.1/32",
        "milter_default_action": "tempfail"})
    with filters.DnsServer(h) as dns, filters.Rspamd(h, dns) as spam, \
            filters.OpenDkim(h, dns) as dkim:
        env.options["smtpd_milters"] = "rspamd opendkim"
        env.options["submission_milters"] = "opendkim"
        env.write_config()
        with open(env.conf, "a") as f:
            f.write(f"\n[milter.rspamd]\naddress = {spam.milter_address}\n"
                    f"\n[milter.opendkim]\naddress = {dkim.milter_address}\n")
        env.add_user(ALICE, "s1")
        env.start_mta()
        check_inbound(h, env, dns, spam)
        check_submission(h, env, spam, remote)
        env.mta.stop()
        assert not re.search(r"milter=\S+ address=\S+ failed", env.mta.log()), \
            "a filter failed"
    remote.stop()


if __name__ == "__main__":
    mtharness.main(test)
