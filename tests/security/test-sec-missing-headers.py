#!/usr/bin/env python3
"""test-sec-missing-headers.py -- submission completes a message's header
section (issue #19 item 5): RFC 5322 3.6 makes Date: mandatory and RFC
6409 8.2-8.3 lets the MSA add Date: and Message-ID:.

With [mta] add_missing_headers = submission (the default), a message
submitted on 587 (STARTTLS + AUTH) or 465 with only From/To/Subject is
delivered with exactly one Date: (RFC 5322 3.3 form, now) and one
Message-ID: <queue id@hostname>, over DATA and BDAT; a Date: or a
Message-ID: already there (any case, white space before the colon) is not
duplicated nor changed. On port 25 nothing is added, neither for a client
outside mynetworks nor, by default, for one inside; with
submission+mynetworks the mynetworks client gets them (never the outside
one); with never, submission gets nothing either.
RFCs: 6409 8.2-8.3, 5322 3.3, 3.6, 3.6.4."""

import base64
import email.utils
import re
import time

import sec_setup
import mta_setup
import mtharness

ALICE = "alice@example.test"
HOST = "mx.example.test"


def message(tag, extra=""):
    return (f"From: <{ALICE}>\r\nTo: <{ALICE}>\r\nSubject: {tag}\r\n{extra}"
            f"\r\nbody of {tag}\r\nDate: in the body\r\n").encode()


def session(env, port, source=None):
    """A raw session, EHLO'd; AUTH after STARTTLS/implicit TLS on 587/465."""
    login = ALICE if port != env.smtp_port else None
    return sec_setup.raw_session(env, port, source=source, login=login)


def send(env, port, tag, extra="", source=None, bdat=False):
    """Send one message; returns its queue id."""
    r = session(env, port, source)
    sender = ALICE if port != env.smtp_port else "x@remote.test"
    assert r.cmd(f"MAIL FROM:<{sender}>")[0] == 250
    assert r.cmd(f"RCPT TO:<{ALICE}>")[0] == 250
    msg = message(tag, extra)
    if bdat:
        r.send(b"BDAT %d LAST\r\n" % len(msg) + msg)
    else:
        assert r.cmd("DATA")[0] == 354
        r.send(msg + b".\r\n")
    code, text = r.reply()
    assert code == 250, (tag, text)
    r.cmd("QUIT")
    r.close()
    return re.search(r"queued as ([0-9A-F]{16})", text).group(1)


def headers(env, tag):
    """The delivered message's header lines (unfolded enough for us)."""
    def find():
        for m in env.shards["s1"].messages:
            if b"Subject: %s\r\n" % tag.encode() in m.data:
                return m.data
        return None
    data = sec_setup.wait_until(find, what=f"{tag} delivered")
    return data.split(b"\r\n\r\n", 1)[0].decode().split("\r\n")


def fields(hdrs, name):
    return [h.split(":", 1)[1].strip() for h in hdrs
            if re.match(rf"(?i){name}[ \t]*:", h)]


def check_added(env, tag, qid):
    hdrs = headers(env, tag)
    dates, ids = fields(hdrs, "Date"), fields(hdrs, "Message-ID")
    assert len(dates) == 1 and len(ids) == 1, (tag, hdrs)
    assert ids[0] == f"<{qid}@{HOST}>", (tag, ids)
    # RFC 5322 3.3: day-of-week, date, time, zone; and it is now.
    assert re.fullmatch(r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} "
                        r"\d{2}:\d{2}:\d{2} [+-]\d{4}", dates[0]), dates
    when = email.utils.parsedate_to_datetime(dates[0]).timestamp()
    assert abs(when - time.time()) < 120, dates
    # Our trace line stays first.
    assert hdrs[0].startswith("Received: "), hdrs


def check_not_added(env, tag):
    hdrs = headers(env, tag)
    assert fields(hdrs, "Date") == [] and fields(hdrs, "Message-ID") == [], \
        (tag, hdrs)


def check_submission(env):
    for port, name in ((env.submission_port, "587"),
                       (env.submissions_port, "465")):
        check_added(env, f"bare-{name}", send(env, port, f"bare-{name}"))
    check_added(env, "bdat-587", send(env, env.submission_port, "bdat-587",
                                      bdat=True))
    # Present already: kept as it is, not duplicated.
    extra = ("Date: Mon, 30 Nov 2026 08:00:00 +0000\r\n"
             "message-id : <own@client.test>\r\n")
    send(env, env.submission_port, "both-587", extra)
    hdrs = headers(env, "both-587")
    assert fields(hdrs, "Date") == ["Mon, 30 Nov 2026 08:00:00 +0000"], hdrs
    assert fields(hdrs, "Message-ID") == ["<own@client.test>"], hdrs
    # Only one of them present: the other is added.
    qid = send(env, env.submission_port, "date-only-587",
               "DATE: Mon, 30 Nov 2026 08:00:00 +0000\r\n")
    hdrs = headers(env, "date-only-587")
    assert fields(hdrs, "Date") == ["Mon, 30 Nov 2026 08:00:00 +0000"], hdrs
    assert fields(hdrs, "Message-ID") == [f"<{qid}@{HOST}>"], hdrs
    send(env, env.submission_port, "id-only-587",
         "Message-ID: <mine@client.test>\r\n")
    hdrs = headers(env, "id-only-587")
    assert len(fields(hdrs, "Date")) == 1, hdrs
    assert fields(hdrs, "Message-ID") == ["<mine@client.test>"], hdrs


def reconfigure(env, value):
    env.options["add_missing_headers"] = value
    env.write_config()
    env.mta.reload()


def test(h):
    env = mta_setup.MtaEnv(h, users={ALICE: "s1"})
    env.start_mta()
    check_submission(env)
    # Port 25: outside mynetworks (127.0.0.1), and inside (127.0.0.2).
    send(env, env.smtp_port, "outside-25")
    check_not_added(env, "outside-25")
    send(env, env.smtp_port, "inside-25", source="127.0.0.2")
    check_not_added(env, "inside-25")

    reconfigure(env, "submission+mynetworks")
    qid = send(env, env.smtp_port, "inside-25-on", source="127.0.0.2")
    check_added(env, "inside-25-on", qid)
    send(env, env.smtp_port, "outside-25-on")
    check_not_added(env, "outside-25-on")
    check_added(env, "bare-587-on", send(env, env.submission_port,
                                         "bare-587-on"))

    reconfigure(env, "never")
    send(env, env.submission_port, "bare-587-never")
    check_not_added(env, "bare-587-never")
    send(env, env.smtp_port, "inside-25-never", source="127.0.0.2")
    check_not_added(env, "inside-25-never")
    env.mta.stop()


if __name__ == "__main__":
    mtharness.main(test)
