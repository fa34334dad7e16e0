#!/usr/bin/env python3
"""test-filters-selfcheck.py -- checks the milter tests' infrastructure
(#17) without the MTA: tests/integration/filters.py's real filters and
tests/integration/milter_script.py's scripted milter, driven by a small
MTA-side milter client written here (MtaClient).

  * DnsServer (unbound): the standard zones' TXT (SPF, DKIM, DMARC), A and
    MX records answer, with dig when it is installed and with the
    module's own stub query; an unknown name is NXDOMAIN at once, and
    unbound logs no recursion (nothing leaves the machine).
  * Rspamd over rspamc: GTUBE is rejected; From reject.test from
    127.0.0.1 gets R_SPF_FAIL, DMARC_POLICY_REJECT and action reject;
    From good.test gets R_SPF_ALLOW and DMARC_POLICY_ALLOW and is not
    rejected; a good.test message signed by opendkim-testmsg verifies
    (filters.verify_dkim: R_DKIM_ALLOW) and fails once its body changes.
  * Rspamd over the milter protocol: the proxy worker adds
    Authentication-Results and X-Spamd-Result at end of body for a
    good.test message and refuses the reject.test one.
  * OpenDkim: with {auth_type} (the built-in test) or only
    {auth_authen} (MacroList) from a 127.0.0.1 client it inserts a
    DKIM-Signature that rspamd verifies; without either it signs nothing
    (127.0.0.1 is not an InternalHost).
  * milter_script.MilterServer, over TCP and over a Unix socket: OPTNEG
    with actions, NR_* flags and a SETSYMLIST; per-recipient replycode;
    no replies for NR stages; EOM modifications in order, the body
    replaced in chunks; PROGRESS while slow; close mid-body; garbage; and
    everything recorded (commands, macros per stage, headers, body).

Exits 0, 1, or 77 when unbound, rspamd or opendkim is not installed
(scripts/lib.sh installs them). Needs no build: $MT_BUILDDIR is unused.
"""

import os
import shutil
import socket
import struct
import subprocess
import sys
import time

sys.dont_write_bytecode = True     # keep the source tree clean
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
sys.path.insert(0, HERE)
import filters  # noqa: E402
import milter_script as ms  # noqa: E402
import mtharness  # noqa: E402
from mtharness import HarnessError  # noqa: E402


def check(cond, what):
    if not cond:
        raise HarnessError(what)


# A minimal MTA side of the milter protocol

class MtaClient:
    """Speaks to a milter as an MTA would (one SMTP session), recording
    each reply. Progress packets are skipped (and counted)."""

    def __init__(self, address, timeout=20.0):
        if address.startswith("unix:"):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(address[5:])
        else:
            host, _, port = address[len("inet:"):].rpartition(":")
            self.sock = socket.create_connection((host, int(port)), timeout)
        self.sock.settimeout(timeout)
        self.progress = 0
        self.negotiated = None

    def close(self):
        self.sock.close()

    def send(self, code, data=b""):
        self.sock.sendall(ms.encode_packet(code, data))

    def read(self):
        while True:
            code, data = ms.read_packet(self.sock)
            if code != ms.SMFIR_PROGRESS:
                return code, data
            self.progress += 1

    def optneg(self, actions=ms.SMFIF_ALL, protocol=0x001FFFFF):
        self.send(ms.SMFIC_OPTNEG, struct.pack("!III", 6, actions, protocol))
        code, data = self.read()
        check(code == ms.SMFIC_OPTNEG, f"OPTNEG answered {code!r} {data!r}")
        self.negotiated = ms.decode_optneg(data)
        return self.negotiated

    def macros(self, for_code, values):
        if values:
            self.send(ms.SMFIC_MACRO,
                      for_code + b"".join(ms.cstr(k, v) for k, v in values.items()))

    def _no_reply(self, stage):
        flag = ms.NO_REPLY_FLAGS.get(stage, 0)
        return bool(self.negotiated and self.negotiated["protocol"] & flag)

    def command(self, code, data=b"", macros=None):
        """Send one command (its macros first); its reply, or None when the
        milter negotiated no reply for it."""
        self.macros(code, macros)
        self.send(code, data)
        if self._no_reply(ms.STAGES[code]):
            return None
        return self.read()

    def end_of_body(self, macros=None):
        """BODYEOB; (modifications, final reply)."""
        self.macros(ms.SMFIC_BODYEOB, macros)
        self.send(ms.SMFIC_BODYEOB)
        mods = []
        while True:
            code, data = self.read()
            if code in (ms.SMFIR_ACCEPT, ms.SMFIR_CONTINUE, ms.SMFIR_REJECT,
                        ms.SMFIR_TEMPFAIL, ms.SMFIR_DISCARD,
                        ms.SMFIR_REPLYCODE, ms.SMFIR_CONN_FAIL,
                        ms.SMFIR_SHUTDOWN):
                return mods, (code, data)
            mods.append((code, data))

    def session(self, msg, mail_from, rcpts, auth=None, client="127.0.0.1",
                helo="client.example.test", chunk=65535):
        """A whole transaction: CONNECT .. EOM. auth: extra macros for MAIL
        ({auth_type}, {auth_authen}). Returns dict of stage -> reply and
        "mods", "final"."""
        out = {}
        conn = ms.cstr("localhost") + b"4" + struct.pack("!H", 40000) + \
            ms.cstr(client)
        out["connect"] = self.command(ms.SMFIC_CONNECT, conn, {
            "j": "mx.example.test", "{daemon_name}": "mailtier-mta",
            "{client_addr}": client, "{client_name}": "localhost"})
        out["helo"] = self.command(ms.SMFIC_HELO, ms.cstr(helo))
        mail_macros = {"{mail_addr}": mail_from}
        mail_macros.update(auth or {})
        out["mail"] = self.command(ms.SMFIC_MAIL, ms.cstr(f"<{mail_from}>"),
                                   mail_macros)
        out["rcpt"] = [self.command(ms.SMFIC_RCPT, ms.cstr(f"<{r}>"),
                                    {"{rcpt_addr}": r}) for r in rcpts]
        out["data"] = self.command(ms.SMFIC_DATA, b"", {"i": "QID0001"})
        head, _, body = msg.partition(b"\r\n\r\n")
        out["header"] = []
        for line in unfold(head):
            name, _, value = line.partition(b":")
            out["header"].append(self.command(
                ms.SMFIC_HEADER, name + b"\0" + value.lstrip(b" \t") + b"\0"))
        out["eoh"] = self.command(ms.SMFIC_EOH)
        out["body"] = [self.command(ms.SMFIC_BODY, body[i:i + chunk])
                       for i in range(0, len(body), chunk)]
        out["mods"], out["final"] = self.end_of_body()
        return out

    def quit(self):
        self.send(ms.SMFIC_QUIT)
        self.close()


def unfold(head):
    """Header fields of head (bytes, CRLF lines), continuation lines kept
    inside their field with the CRLF."""
    fields = []
    for line in head.split(b"\r\n"):
        if line[:1] in (b" ", b"\t") and fields:
            fields[-1] += b"\r\n" + line
        else:
            fields.append(line)
    return fields


def message(frm, to="bob@example.test", subject="self-check", body=None):
    body = body or (b"Hello Bob,\r\n\r\nthis is the filters' self-check.\r\n"
                    b"-- \r\nalice\r\n")
    return (f"From: <{frm}>\r\nTo: <{to}>\r\nSubject: {subject}\r\n"
            f"Date: Mon, 01 Jan 2024 12:00:00 +0000\r\n"
            f"Message-ID: <{time.monotonic_ns()}@{frm.split('@')[1]}>\r\n"
            "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=us-ascii\r\n"
            "\r\n").encode() + body


def headers_added(mods):
    """(name, value) of the ADDHEADER and INSHEADER modifications."""
    out = []
    for code, data in mods:
        if code == ms.SMFIR_ADDHEADER:
            name, value = ms.cstrings(data)[:2]
        elif code == ms.SMFIR_INSHEADER:
            name, value = ms.cstrings(data[4:])[:2]
        else:
            continue
        out.append((name, value))
    return out


def with_header(msg, name, value):
    """msg with the header prepended as the MTA would store it (milter
    values fold with a bare LF: the MTA writes CRLF)."""
    value = value.replace("\r\n", "\n").replace("\n", "\r\n")
    return f"{name}: {value}\r\n".encode() + msg


# DNS

def check_dns(dns):
    for name, rtype, want in (
            ("good.test", "TXT", "v=spf1 ip4:127.0.0.0/8 -all"),
            ("_dmarc.good.test", "TXT", "v=DMARC1; p=reject"),
            ("mt._domainkey.good.test", "TXT", dns.keys["good.test"].txt),
            ("reject.test", "TXT", "v=spf1 ip4:192.0.2.1 -all"),
            ("_dmarc.reject.test", "TXT", "v=DMARC1; p=reject"),
            ("_dmarc.example.test", "TXT", "v=DMARC1; p=none"),
            ("mt._domainkey.example.test", "TXT", dns.keys["example.test"].txt),
            ("example.test", "MX", "10 mx.example.test"),
            ("mx.good.test", "A", "127.0.0.1")):
        a = dns.query(name, rtype)
        check(a.rcode == "NOERROR" and a.records == [want],
              f"{name} {rtype}: {a}, wanted {want!r}")
    check(len(dns.keys["good.test"].txt) > 255, "a 2048-bit key's TXT is "
          "over 255 octets (split into strings)")
    t0 = time.monotonic()
    for name in ("www.example.com", "nonexistent.good.test", "rspamd.com"):
        a = dns.query(name, "A", timeout=2)
        check(a.rcode == "NXDOMAIN", f"{name}: {a}, wanted NXDOMAIN")
    check(time.monotonic() - t0 < 2, "NXDOMAIN answers were not immediate")
    check(dns.query("good.test", "AAAA").records == [], "good.test AAAA")
    if shutil.which("dig"):
        p = subprocess.run(["dig", "+short", "+time=2", "+tries=1", "-p",
                            str(dns.port), "@127.0.0.1",
                            "mt._domainkey.good.test", "TXT"],
                           capture_output=True, text=True, timeout=30)
        got = "".join(part.strip('"') for part in p.stdout.split())
        check(got.replace("k=rsa;p=", "k=rsa; p=").replace("v=DKIM1;k", "v=DKIM1; k")
              == dns.keys["good.test"].txt, f"dig DKIM TXT: {p.stdout!r}")
        p = subprocess.run(["dig", "+time=2", "+tries=1", "-p", str(dns.port),
                            "@127.0.0.1", "www.example.com", "A"],
                           capture_output=True, text=True, timeout=30)
        check("status: NXDOMAIN" in p.stdout, f"dig unknown name: {p.stdout}")


# rspamd

def check_rspamd_rspamc(dns, spam):
    gtube = message("someone@good.test", body=(
        b"XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X"
        b"\r\n"))
    r = spam.check(gtube, mail_from="someone@good.test",
                   rcpts=["bob@example.test"])
    check(r.action == "reject" and r.has("GTUBE"), f"GTUBE: {r}")

    r = spam.check(message("someone@reject.test"), ip="127.0.0.1",
                   mail_from="someone@reject.test", rcpts=["bob@example.test"],
                   helo="client.reject.test")
    check(r.has("R_SPF_FAIL"), f"reject.test SPF: {r}")
    check(r.has("DMARC_POLICY_REJECT"), f"reject.test DMARC: {r}")
    check(r.action == "reject", f"reject.test action: {r}")

    r = spam.check(message("someone@good.test"), ip="127.0.0.1",
                   mail_from="someone@good.test", rcpts=["bob@example.test"],
                   helo="client.good.test")
    check(r.has("R_SPF_ALLOW"), f"good.test SPF: {r}")
    check(r.has("DMARC_POLICY_ALLOW"), f"good.test DMARC: {r}")
    check(r.action != "reject", f"good.test action: {r}")

    signed = filters.sign_message(dns.keys["good.test"],
                                  message("someone@good.test"))
    v = filters.verify_dkim(spam, signed)
    check(v.result == "pass" and v.domains == ["good.test"],
          f"good.test signed by opendkim-testmsg: {v}")
    v = filters.verify_dkim(spam, signed.replace(b"Hello Bob", b"Hello Eve"))
    check(v.result == "fail", f"altered body: {v}")
    v = filters.verify_dkim(spam, message("someone@good.test"))
    check(v.result == "none", f"unsigned: {v}")


def check_rspamd_milter(spam):
    c = MtaClient(spam.milter_address)
    neg = c.optneg()
    check(neg["version"] == 6, f"rspamd OPTNEG: {neg}")
    out = c.session(message("someone@good.test"), "someone@good.test",
                    ["bob@example.test"], helo="client.good.test")
    added = dict((n.lower(), v) for n, v in headers_added(out["mods"]))
    check("authentication-results" in added, f"no A-R from rspamd: {out['mods']}")
    ar = added["authentication-results"]
    check("spf=pass" in ar and "dmarc=pass" in ar, f"rspamd A-R: {ar!r}")
    check("x-spamd-result" in added, f"no X-Spamd-Result: {out['mods']}")
    check(out["final"][0] in (ms.SMFIR_ACCEPT, ms.SMFIR_CONTINUE),
          f"good.test at EOM: {out['final']}")
    c.quit()

    c = MtaClient(spam.milter_address)
    c.optneg()
    out = c.session(message("someone@reject.test"), "someone@reject.test",
                    ["bob@example.test"], helo="client.reject.test")
    code, data = out["final"]
    check(code == ms.SMFIR_REJECT or (code == ms.SMFIR_REPLYCODE and
                                      data.startswith(b"5")),
          f"reject.test at EOM: {out['final']} mods {out['mods']}")
    c.close()
    return neg


# OpenDKIM

def check_opendkim(dkim, spam):
    msg = message("alice@example.test")
    cases = (("{auth_type}", {"{auth_type}": "PLAIN", "{auth_authen}": "alice"}),
             ("{auth_authen} only", {"{auth_authen}": "alice"}))
    for what, auth in cases:
        c = MtaClient(dkim.milter_address)
        c.optneg()
        out = c.session(msg, "alice@example.test", ["bob@good.test"], auth=auth)
        c.quit()
        sigs = [v for n, v in headers_added(out["mods"])
                if n.lower() == "dkim-signature"]
        check(len(sigs) == 1, f"{what}: no DKIM-Signature: {out['mods']}")
        check("d=example.test" in sigs[0] and "s=mt" in sigs[0],
              f"{what}: signature {sigs[0]!r}")
        v = filters.verify_dkim(spam, with_header(msg, "DKIM-Signature", sigs[0]))
        check(v.result == "pass" and v.domains == ["example.test"],
              f"{what}: the signature does not verify: {v}")
        v = filters.verify_dkim(spam, with_header(
            msg.replace(b"Hello Bob", b"Hello Eve"), "DKIM-Signature", sigs[0]))
        check(v.result == "fail", f"{what}: altered body still verifies: {v}")

    c = MtaClient(dkim.milter_address)
    c.optneg()
    out = c.session(msg, "alice@example.test", ["bob@good.test"])
    c.quit()
    added = headers_added(out["mods"])
    check(not [n for n, _ in added if n.lower() == "dkim-signature"],
          f"unauthenticated loopback mail was signed: {added}")
    check(out["final"][0] in (ms.SMFIR_ACCEPT, ms.SMFIR_CONTINUE),
          f"opendkim at EOM: {out['final']}")

    # Verifying (its resolver reaches the DnsServer): inbound good.test
    # mail signed elsewhere passes, and fails once altered.
    signed = filters.sign_message(dkim.dns.keys["good.test"],
                                  message("someone@good.test"))
    for what, msg, want in (
            ("signed", signed, "dkim=pass"),
            ("altered", signed.replace(b"Hello Bob", b"Hello Eve"), "dkim=fail")):
        c = MtaClient(dkim.milter_address)
        c.optneg()
        out = c.session(msg, "someone@good.test", ["bob@example.test"])
        c.quit()
        ar = [v for n, v in headers_added(out["mods"])
              if n.lower() == "authentication-results"]
        check(len(ar) == 1 and want in ar[0] and "header.d=good.test" in ar[0],
              f"opendkim verifying {what} good.test mail: {out['mods']}")


# The scripted milter

def check_milter_script(h):
    body = b"line one\r\nline two\r\n" * 10
    new_body = b"replaced body\r\n" * 100
    script = ms.Script(
        protocol=ms.SMFIP_NR_HDR | ms.SMFIP_NR_CONN,
        symlists={ms.SMFIM_ENVFROM: "{auth_authen} {mail_addr}"},
        on={"rcpt": ms.by_rcpt({"bad@example.test":
                                ms.replycode("550 5.7.1 not this one")}),
            "eoh": ms.progress(0.5, every=0.1),
            "eom": ms.ACCEPT},
        mods=[ms.add_header("X-Script", "yes"),
              ms.insert_header(0, "X-First", "1"),
              ms.change_header(1, "Subject", "changed"),
              ms.delete_header(1, "X-Old"),
              ms.add_rcpt("new@example.test"),
              ms.add_rcpt_par("par@example.test", "NOTIFY=NEVER"),
              ms.del_rcpt("<bob@example.test>"),
              ms.change_from("<other@example.test>", "SIZE=10"),
              ms.quarantine("held"),
              ms.replace_body(new_body, chunks=3)])
    for unix in (False, True):
        path = os.path.join(h.tmpdir, "milter.sock") if unix else None
        with ms.MilterServer(script, unix_path=path) as milter:
            check(milter.address.startswith("unix:" if unix else "inet:127.0.0.1:"),
                  milter.address)
            c = MtaClient(milter.address)
            neg = c.optneg()
            check(neg["protocol"] == ms.SMFIP_NR_HDR | ms.SMFIP_NR_CONN and
                  neg["actions"] == ms.SMFIF_ALL and
                  neg["symlists"] == {ms.SMFIM_ENVFROM:
                                      "{auth_authen} {mail_addr}"},
                  f"script OPTNEG: {neg}")
            msg = (b"From: a@example.test\r\nSubject: s\r\nX-Old: x\r\n"
                   b"X-Long: one\r\n\ttwo\r\n\r\n" + body)
            out = c.session(msg, "a@example.test",
                            ["bob@example.test", "bad@example.test"],
                            auth={"{auth_authen}": "alice"}, chunk=50)
            check(out["connect"] is None and out["header"] == [None] * 4,
                  f"replies on NR stages: {out}")
            check(out["rcpt"][0] == (ms.SMFIR_CONTINUE, b"") and
                  out["rcpt"][1] == (ms.SMFIR_REPLYCODE,
                                     b"550 5.7.1 not this one\0"),
                  f"rcpt replies: {out['rcpt']}")
            check(c.progress >= 3, f"{c.progress} PROGRESS packets while slow")
            codes = [code for code, _ in out["mods"]]
            check(codes == [b"h", b"i", b"m", b"m", b"+", b"2", b"-", b"e", b"q",
                            b"b", b"b", b"b"], f"EOM modifications: {codes}")
            check(b"".join(d for code, d in out["mods"] if code == b"b")
                  == new_body, "replaced body")
            check(out["final"] == (ms.SMFIR_ACCEPT, b""), f"final {out['final']}")
            c.quit()
            s = milter.wait_sessions(1)[0]
            check(s.names() == ["optneg", "connect", "helo", "mail", "rcpt",
                                "rcpt", "data", "header", "header", "header",
                                "header", "eoh", "body", "body", "body", "body",
                                "eom", "quit"], f"recorded: {s.names()}")
            m = s.message
            check(m.mail == "<a@example.test>" and
                  m.rcpts == ["<bob@example.test>", "<bad@example.test>"],
                  f"envelope {m.mail} {m.rcpts}")
            check(m.headers == [("From", "a@example.test"), ("Subject", "s"),
                                ("X-Old", "x"), ("X-Long", "one\r\n\ttwo")],
                  f"headers {m.headers}")
            check(m.body == body and m.eom and not m.aborted, "body")
            check(s.macros["mail"] == {"{mail_addr}": "a@example.test",
                                       "{auth_authen}": "alice"},
                  f"macros {s.macros}")
            check(s.macros["connect"]["{client_addr}"] == "127.0.0.1", "")
            check(s.find("connect")[0].fields["address"] == "127.0.0.1" and
                  s.find("connect")[0].fields["family"] == "4", "connect")
            check(s.closed_by == "mta" and not s.errors, f"end {s}")

    # A slow OPTNEG answer, then the normal one; a version the MTA did
    # not offer, sent as is (exact).
    slow = ms.Script(version=2, actions=0x3FF, exact=True,
                     on={"optneg": ms.sleep(0.3)})
    with ms.MilterServer(slow) as milter:
        c = MtaClient(milter.address)
        t0 = time.monotonic()
        neg = c.optneg()
        check(time.monotonic() - t0 >= 0.29 and neg["version"] == 2 and
              neg["actions"] == 0x3FF, f"slow OPTNEG {neg}")
        c.close()
        s = milter.wait_sessions(1)[0]
        check(s.optneg["version"] == 6 and s.closed_by == "mta", f"{s}")

    # Misbehaviour: close mid-body; garbage; a slow answer.
    bad = ms.Script(on={"body": ms.close(), "helo": ms.garbage(),
                        "mail": ms.sleep(0.3, then=ms.TEMPFAIL)})
    with ms.MilterServer(bad) as milter:
        c = MtaClient(milter.address)
        c.optneg()
        check(c.command(ms.SMFIC_CONNECT, ms.cstr("h") + b"U") ==
              (ms.SMFIR_CONTINUE, b""), "connect")
        c.send(ms.SMFIC_HELO, ms.cstr("x"))
        raw = c.sock.recv(100)
        check(raw.startswith(b"\xff\xff\xff\xff"), f"garbage {raw!r}")
        t0 = time.monotonic()
        check(c.command(ms.SMFIC_MAIL, ms.cstr("<a@b.test>")) ==
              (ms.SMFIR_TEMPFAIL, b""), "mail tempfail")
        check(time.monotonic() - t0 >= 0.29, "sleep before the reply")
        c.send(ms.SMFIC_BODY, b"partial")
        try:
            got = c.sock.recv(10)
        except OSError:
            got = b""
        check(got == b"", f"connection not closed mid-body: {got!r}")
        s = milter.wait_sessions(1)[0]
        check(s.closed_by == "milter" and s.names()[-1] == "body", f"{s}")


def test(h):
    filters.require("unbound", "rspamd", "rspamc", "opendkim",
                    "opendkim-testmsg")
    t0 = time.monotonic()
    check_milter_script(h)
    with filters.DnsServer(h) as dns:
        check_dns(dns)
        with filters.Rspamd(h, dns) as spam:
            check_rspamd_rspamc(dns, spam)
            neg = check_rspamd_milter(spam)
            h.note(f"rspamd's OPTNEG reply: {neg}")
            with filters.OpenDkim(h, dns) as dkim:
                check_opendkim(dkim, spam)
        asked = {name for _, name, _ in dns.queries()}
        check("mt._domainkey.example.test" in asked and
              "_dmarc.reject.test" in asked, f"DNS queries seen: {asked}")
    # unbound's statistics at exit: everything answered from local data.
    check(" 0 recursions" in dns.log_text(), "unbound recursed")
    h.note(f"self-check took {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    mtharness.main(test)
