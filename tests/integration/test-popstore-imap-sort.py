#!/usr/bin/env python3
"""test-popstore-imap-sort.py -- mailtier-popstore's SORT (RFC 5256 3),
ESORT (RFC 5267) and SORT=DISPLAY (RFC 5957) with Python's imaplib
against a live store, messages delivered over LMTP:

  - CAPABILITY after login lists SORT, SORT=DISPLAY and ESORT;
  - each key (ARRIVAL, CC, DATE, FROM, SIZE, SUBJECT, TO, DISPLAYFROM,
    DISPLAYTO) and REVERSE on a small mailbox with known answers: the
    base subject ("Re:", "Fwd:", "[list]", "(fwd)", "[fwd: ...]", encoded
    words) compared in i;unicode-casemap (case and accents), a missing or
    unreadable Date: sorting by the INTERNALDATE, ties in sequence order;
  - the search criteria after the charset (flags, header text, UID sets),
    UID SORT, ESORT's RETURN (MIN MAX COUNT ALL, in sort order), no
    matches, BADCHARSET, BAD programs;
  - a folder of 300 messages with Re:/Fwd:/[list] subjects, several
    senders and dates in several zones (some missing or broken): SORT
    (SUBJECT DATE), SORT (REVERSE DATE), SORT (FROM REVERSE SIZE) and UID
    SORT (DISPLAYFROM) equal an independent Python implementation of RFC
    5256 2.1 and 3 over what FETCH returns.
"""

import email
import email.header
import email.utils
import imaplib
import random
import re
import time
import unicodedata

import mtharness
import popstorelib

D = popstorelib.DOMAIN
PW = "sort-pass-1"


def ok(res):
    typ, data = res
    assert typ == "OK", res
    return data


def msg(subject=None, date=None, frm="sender@remote.test", to=f"someone@{D}",
        cc=None, body="body\r\n", extra=""):
    head = f"From: {frm}\r\n"
    if to is not None:
        head += f"To: {to}\r\n"
    if cc is not None:
        head += f"Cc: {cc}\r\n"
    if subject is not None:
        head += f"Subject: {subject}\r\n"
    if date is not None:
        head += f"Date: {date}\r\n"
    return (head + extra + "\r\n" + body).encode()


def sort(c, *args, uid=False):
    """The numbers of a SORT (or UID SORT) answer, in order."""
    if uid:
        typ, data = c.uid("SORT", *args)
    else:
        typ, data = c._simple_command("SORT", *args)
        data = c._untagged_response(typ, data, "SORT")[1]
    assert typ == "OK", (args, typ, data)
    return [int(x) for x in (data[0] or b"").split()]


def esort(c, *args):
    typ, data = c._simple_command("SORT", *args)
    assert typ == "OK", (args, typ, data)
    line = c._untagged_response(typ, data, "ESEARCH")[1][0]
    return line.split(b")", 1)[1].decode()


# --- an independent RFC 5256 / RFC 5051 model ---

BLOB = r"\[[^\[\]]*\][ \t]*"
REFWD = r"(?:re|fwd?)[ \t]*(?:" + BLOB + r")?:"
LEADER = re.compile(r"^(?:(?:" + BLOB + r")*" + REFWD + r"|[ \t])", re.I)


def decode_words(s):
    out = []
    for text, cs in email.header.decode_header(s):
        out.append(text.decode(cs or "ascii", "replace") if isinstance(text, bytes) else text)
    return "".join(out)


def base_subject(s):
    s = decode_words(s) if "=?" in s else s
    s = re.sub(r"[ \t\r\n]+", " ", s)
    while True:
        while True:                                 # step 2
            t = re.sub(r"(?i)(\(fwd\)| )$", "", s)
            if t == s:
                break
            s = t
        changed = True
        while changed:                              # steps 3-5
            changed = False
            while True:
                m = LEADER.match(s)
                if not m:
                    break
                s = s[m.end():]
                changed = True
            m = re.match(BLOB, s)
            if m and s[m.end():].strip(" \t"):
                s = s[m.end():]
                changed = True
        if s[:5].lower() == "[fwd:" and s.endswith("]"):   # step 6
            s = s[5:-1]
            continue
        return s


def casemap(s):
    """RFC 5051 for what the store maps: titlecase then NFD (Latin)."""
    out = []
    for ch in s:
        if ord(ch) < 0x180:
            ch = ch.upper() if ch not in "\u00df\u0149\u0138" else ch
            if ch == "\u0130":
                ch = "I\u0307"
        out.append(unicodedata.normalize("NFD", ch))
    return "".join(out).encode()


def sent_date(value, arrival):
    try:
        d = email.utils.parsedate_to_datetime(value)
        return int(d.timestamp())
    except (TypeError, ValueError, IndexError):
        return arrival


# --- tests ---

def test_capability(env):
    c = env.imap("s1", user=f"alice@{D}", password=PW)
    typ, data = c.capability()
    caps = data[0].decode().split()
    for cap in ("SORT", "SORT=DISPLAY", "ESORT"):
        assert cap in caps, caps
    c.logout()


SMALL = [
    # 1
    dict(subject="Re: Zebra", date="Mon, 7 Feb 1994 21:52:25 -0800",
         frm='"Zed" <zed@x.org>', to="amy@y.org", cc="carl@z.org", body="b" * 100),
    # 2
    dict(subject="apple", date="Mon, 7 Feb 1994 20:00:00 -0800",
         frm="bob@x.org", to='"Carl" <Carl@y.org>', body="b" * 900),
    # 3: no readable date: its INTERNALDATE (now) is the latest
    dict(subject="[list] Apple", date="not a date",
         frm="=?utf-8?q?=C3=89mile?= <emile@x.org>", to="bea@y.org", cc="Bob@z.org",
         body="b" * 10),
    # 4
    dict(subject="=?utf-8?q?Fwd=3A_zebra?= (fwd)", date="Tue, 8 Feb 1994 05:00:00 +0000",
         frm="alice <Alice@x.org>", to=None, body="b" * 500),
    # 5
    dict(subject="[fwd: Re: \u00c9clair]", date="8 Feb 1994 04:59:59 -0000",
         frm="\u00e9lodie@x.org", to="zoe@y.org", body="b" * 300),
]


def test_keys(env):
    user = f"alice@{D}"
    for m in SMALL:
        env.deliver("s1", "x@remote.test", [user], msg(**m))
    c = env.imap("s1", user=user, password=PW)
    c._simple_command("ENABLE", "UTF8=ACCEPT")
    ok(c.select("INBOX"))
    cases = [
        ("(ARRIVAL)", [1, 2, 3, 4, 5]),
        # 2 (04:00Z), 1 (05:52Z), 5 (04:59:59Z), 4 (05:00Z), 3 (now)
        ("(DATE)", [2, 5, 4, 1, 3]),
        ("(REVERSE DATE)", [3, 1, 4, 5, 2]),
        ("(SIZE)", [3, 1, 5, 4, 2]),
        # apple = Apple (2, 3), Éclair (5) after them, zebra = Zebra (1, 4)
        ("(SUBJECT)", [2, 3, 5, 1, 4]),
        ("(SUBJECT REVERSE DATE)", [3, 2, 5, 1, 4]),
        ("(FROM)", [4, 2, 3, 5, 1]),     # alice bob emile élodie zed
        ("(TO)", [4, 1, 3, 2, 5]),       # (none) amy bea Carl zoe
        ("(CC)", [2, 4, 5, 3, 1]),       # (none x3) Bob carl
        # alice, bob@x.org, élodie@x.org, Émile, Zed ("E\u0301L" < "E\u0301M")
        ("(DISPLAYFROM)", [4, 2, 5, 3, 1]),
        ("(DISPLAYTO)", [4, 1, 3, 2, 5]),  # (none) amy@ bea@ Carl zoe@
        ("(REVERSE SIZE)", [2, 4, 5, 1, 3]),
    ]
    for program, want in cases:
        got = sort(c, program, "UTF-8", "ALL")
        assert got == want, (program, got, want)
    # Criteria after the charset, as SEARCH reads them.
    ok(c.store("2,4", "+FLAGS", "(\\Flagged)"))
    assert sort(c, "(SUBJECT)", "US-ASCII", "FLAGGED") == [2, 4]
    assert sort(c, "(REVERSE SUBJECT)", "UTF-8", "UNFLAGGED", "NOT", "1") == [5, 3]
    assert sort(c, "(DATE)", "UTF-8", "SUBJECT", "zebra") == [4, 1]
    assert sort(c, "(DATE)", "UTF-8", "BODY", "nothing-like-this") == []
    # UID SORT answers UIDs.
    typ, data = c.fetch("1:5", "(UID)")
    uids = [int(re.search(rb"UID (\d+)", d).group(1)) for d in data]
    assert sort(c, "(DATE)", "UTF-8", "ALL", uid=True) == [uids[i - 1] for i in (2, 5, 4, 1, 3)]
    assert sort(c, "(DATE)", "UTF-8", "UID", f"{uids[1]}:{uids[3]}", uid=True) == \
        [uids[i - 1] for i in (2, 4, 3)]
    # ESORT: MIN / MAX the first / last in sort order, ALL in sort order.
    assert esort(c, "RETURN", "(MIN MAX COUNT ALL)", "(DATE)", "UTF-8", "ALL") == \
        " MIN 2 MAX 3 COUNT 5 ALL 2,5,4,1,3"
    assert esort(c, "RETURN", "(COUNT)", "(DATE)", "UTF-8", "FLAGGED") == " COUNT 2"
    assert esort(c, "RETURN", "()", "(ARRIVAL)", "UTF-8", "ALL") == " ALL 1:5"
    assert esort(c, "RETURN", "(MIN MAX ALL)", "(DATE)", "UTF-8", "DELETED") == ""
    typ, data = c._simple_command("UID", "SORT", "RETURN", "(MAX)", "(DATE)", "UTF-8", "ALL")
    data = c._untagged_response(typ, data, "ESEARCH")[1]
    assert typ == "OK" and data[0].endswith(b" UID MAX %d" % uids[2]), data
    # Refusals.
    typ, data = c._simple_command("SORT", "(DATE)", "KOI8-R", "ALL")
    assert typ == "NO" and b"BADCHARSET" in data[0], (typ, data)
    for bad in (("DATE", "UTF-8", "ALL"), ("()", "UTF-8", "ALL"), ("(BOGUS)", "UTF-8", "ALL"),
                ("(REVERSE)", "UTF-8", "ALL"), ("(DATE)", "UTF-8"),
                ("(DATE)", "UTF-8", "NOSUCHKEY"), ("RETURN", "(FOO)", "(DATE)", "UTF-8", "ALL")):
        try:
            typ, data = c._simple_command("SORT", *bad)
        except imaplib_error:
            typ = "BAD"
        assert typ == "BAD", (bad, typ)
    c.logout()


imaplib_error = imaplib.IMAP4.error

SUBJECTS = ["Budget", "budget", "Lunch?", "Release 2.0", "caf\u00e9", "CAFE\u0301 menu",
            "[Fwd: minutes]", "minutes", "Zebra crossing", "\u00e9t\u00e9"]
PREFIXES = ["", "", "Re: ", "RE: re: ", "Fwd: ", "Fw: ", "[dev] ", "[dev] Re: ",
            "Re[2]: ", "Re: [ops] ", "  "]
SENDERS = ["ann@a.test", "Bob Brown <bob@b.test>", '"\u00c9lise" <elise@c.test>',
           "carl@C.test", "=?iso-8859-1?q?Andr=E9?= <andre@d.test>", "dora@e.test"]
ZONES = ["+0000", "-0800", "+0530", "+0100", "GMT", "EST"]


def test_big_folder(env):
    user = f"bob@{D}"
    rng = random.Random(5256)
    lm = env.lmtp("s1")
    for i in range(300):
        subject = rng.choice(PREFIXES) + rng.choice(SUBJECTS)
        if rng.random() < 0.1:
            subject += " (fwd)"
        day = rng.randint(1, 28)
        if rng.random() < 0.05:
            date = None
        elif rng.random() < 0.05:
            date = "garbage date"
        else:
            date = (f"Mon, {day} Mar 2026 {rng.randint(0, 23):02d}:"
                    f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} {rng.choice(ZONES)}")
        env.deliver("s1", "x@remote.test", [user],
                    msg(subject=subject, date=date, frm=rng.choice(SENDERS),
                        body="x" * rng.randint(10, 3000)), lm=lm)
    lm.quit()
    c = env.imap("s1", user=user, password=PW)
    c._simple_command("ENABLE", "UTF8=ACCEPT")
    ok(c.select("INBOX"))
    # What the model sorts on, fetched.
    typ, data = c.fetch("1:300", "(UID RFC822.SIZE INTERNALDATE BODY.PEEK[HEADER.FIELDS "
                        "(SUBJECT DATE FROM)])")
    assert typ == "OK", data
    msgs = []
    for item in data:
        if not isinstance(item, tuple):
            continue
        meta, head = item
        seq = int(meta.split()[0])
        uid = int(re.search(rb"UID (\d+)", meta).group(1))
        size = int(re.search(rb"RFC822.SIZE (\d+)", meta).group(1))
        idate = re.search(rb'INTERNALDATE "([^"]+)"', meta).group(1).decode()
        arrival = int(time.mktime(imaplib.Internaldate2tuple(
            b'INTERNALDATE "' + idate.encode() + b'"')))
        fields = email.message_from_string(head.decode("utf-8"))
        frm = fields.get("From", "")
        name, addr = email.utils.parseaddr(frm)
        name = decode_words(name) if "=?" in name else name
        msgs.append(dict(seq=seq, uid=uid, size=size,
                         subject=casemap(base_subject(fields.get("Subject", ""))),
                         date=sent_date(fields.get("Date"), arrival),
                         mailbox=casemap(addr.split("@")[0]),
                         display=casemap(name if name.strip() else addr)))
    assert len(msgs) == 300
    model = {
        "(SUBJECT DATE)": sorted(msgs, key=lambda m: (m["subject"], m["date"], m["seq"])),
        "(REVERSE DATE)": sorted(msgs, key=lambda m: (-m["date"], m["seq"])),
        "(FROM REVERSE SIZE)": sorted(msgs, key=lambda m: (m["mailbox"], -m["size"], m["seq"])),
    }
    for program, want in model.items():
        got = sort(c, program, "UTF-8", "ALL")
        assert got == [m["seq"] for m in want], (program, got[:20], [m["seq"] for m in want][:20])
    want = sorted(msgs, key=lambda m: (m["display"], m["seq"]))
    assert sort(c, "(DISPLAYFROM)", "UTF-8", "ALL", uid=True) == [m["uid"] for m in want]
    # The subjects the model reduced really were reduced: several per base.
    bases = {m["subject"] for m in msgs}
    assert len(bases) <= 9, bases
    c.logout()


def test(h):
    env = popstorelib.Env(h, shards=("s1",), popstore_extra="auth_fail_delay = 0\n")
    for user in ("alice", "bob"):
        env.add_user(f"{user}@{D}", PW, shard="s1")
    env.start("s1")
    test_capability(env)
    test_keys(env)
    test_big_folder(env)


if __name__ == "__main__":
    mtharness.main(test)
