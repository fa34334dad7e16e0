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
    return base_subject_reply(s)[0]


def base_subject_reply(s):
    """RFC 5256 2.1: the base subject, and whether it was a reply/forward."""
    s = decode_words(s) if "=?" in s else s
    s = re.sub(r"[ \t\r\n]+", " ", s)
    reply = False
    while True:
        while True:                                 # step 2
            t = re.sub(r"(?i)(\(fwd\)| )$", "", s)
            if t == s:
                break
            reply = reply or not s.endswith(" ")
            s = t
        changed = True
        while changed:                              # steps 3-5
            changed = False
            while True:
                m = LEADER.match(s)
                if not m:
                    break
                reply = reply or m.group(0) not in (" ", "\t")
                s = s[m.end():]
                changed = True
            m = re.match(BLOB, s)
            if m and s[m.end():].strip(" \t"):
                s = s[m.end():]
                changed = True
        if s[:5].lower() == "[fwd:" and s.endswith("]"):   # step 6
            s = s[5:-1]
            reply = True
            continue
        return s, reply


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


# --- an independent RFC 5256 2.3 REFERENCES model ---

def msgids(value):
    if not value:
        return []
    out = []
    for m in re.finditer(r"<([^<>]*)>", value):
        ident = re.sub(r"[ \t\r\n]", "", m.group(1))
        if ident and len(ident) <= 998:
            out.append(ident)
    return out


class Box:
    def __init__(self):
        self.msg = None
        self.parent = None
        self.children = []


def ancestor_or_self(box, target):
    while box is not None:
        if box is target:
            return True
        box = box.parent
    return False


def link(parent, child):
    child.parent = parent
    parent.children.append(child)


def unlink(child):
    if child.parent is not None:
        child.parent.children.remove(child)
        child.parent = None


def thread_references(msgs):
    """msgs: dicts with seq/id, date, subject (casemapped base), reply,
    message_id, references, in_reply_to. Returns the THREAD string."""
    table, boxes = {}, []

    def box_for(ident):
        if ident not in table:
            table[ident] = Box()
            boxes.append(table[ident])
        return table[ident]

    for m in msgs:
        own = msgids(m["message_id"])
        b = box_for(own[0]) if own else None
        if b is None or b.msg is not None:
            b = Box()
            boxes.append(b)
        b.msg = m
        refs = msgids(m["references"])[-256:]
        if not refs:
            refs = msgids(m["in_reply_to"])[:1]
        refs = [box_for(r) for r in refs]
        for parent, child in zip(refs, refs[1:]):
            if child.parent is None and not ancestor_or_self(parent, child):
                link(parent, child)
        unlink(b)
        if refs and not ancestor_or_self(refs[-1], b):
            link(refs[-1], b)
    root = Box()
    for b in boxes:
        if b.parent is None:
            link(root, b)

    def prune(box):
        for child in list(box.children):
            prune(child)
        new = []
        for child in box.children:
            if child.msg is None and (box is not root or len(child.children) <= 1):
                for g in child.children:
                    g.parent = box
                new.extend(child.children)
            else:
                new.append(child)
        box.children = new

    prune(root)

    def key(box):
        first = box if box.msg is not None else box.children[0]
        return (first.msg["date"], first.msg["seq"])

    def sort_all(box):
        for child in box.children:
            sort_all(child)
        box.children.sort(key=key)

    sort_all(root)
    subjects = {}

    def subj(box):
        first = box if box.msg is not None else box.children[0]
        return first.msg["subject"]

    def reply(box):
        return box.msg is not None and box.msg["reply"]

    for box in root.children:
        s = subj(box)
        if not s:
            continue
        old = subjects.get(s)
        if old is None or (box.msg is None and old.msg is not None) or \
                (old.msg is not None and reply(old) and not reply(box)):
            subjects[s] = box
    for box in list(root.children):
        s = subj(box)
        if box.parent is not root or not s:
            continue
        old = subjects[s]
        if old is box:
            continue
        if old.msg is None and box.msg is None:
            unlink(box)
            for g in list(box.children):
                unlink(g)
                link(old, g)
        elif old.msg is None:
            unlink(box)
            link(old, box)
        elif not reply(old) and reply(box):
            unlink(box)
            link(old, box)
        else:
            dummy = Box()
            i = root.children.index(old)
            root.children[i] = dummy
            dummy.parent = root
            old.parent = None
            link(dummy, old)
            unlink(box)
            link(dummy, box)
            subjects[s] = dummy
    sort_all(root)

    def chain(box):
        out, wrote = "", False
        while True:
            if box.msg is not None:
                out += (" " if wrote else "") + str(box.msg["id"])
                wrote = True
            if not box.children:
                return out
            if len(box.children) == 1:
                box = box.children[0]
                continue
            return out + (" " if wrote else "") + "".join(
                "(" + chain(c) + ")" for c in box.children)

    return "".join("(" + chain(b) + ")" for b in root.children)


def thread_orderedsubject(msgs):
    groups = {}
    for m in sorted(msgs, key=lambda m: (m["subject"], m["date"], m["seq"])):
        groups.setdefault(m["subject"], []).append(m)
    out = []
    for g in sorted(groups.values(), key=lambda g: (g[0]["date"], g[0]["seq"])):
        ids = [str(m["id"]) for m in g]
        if len(ids) <= 2:
            out.append("(" + " ".join(ids) + ")")
        else:
            out.append("(" + ids[0] + " " + "".join(f"({i})" for i in ids[1:]) + ")")
    return "".join(out)


def thread(c, *args, uid=False):
    if uid:
        typ, data = c._simple_command("UID", "THREAD", *args)
    else:
        typ, data = c._simple_command("THREAD", *args)
    assert typ == "OK", (args, typ, data)
    data = c._untagged_response(typ, data, "THREAD")[1]
    return (data[0] or b"").decode()


def test_thread_small(env):
    """RFC 5256 4's example tree, ORDEREDSUBJECT, criteria, UID THREAD."""
    user = f"carol@{D}"
    tree = [  # (n, message-id, references, subject)
        (1, "<2@x>", None, "other"),
        (2, "<3@x>", None, "t"),
        (3, "<6@x>", "<3@x>", "Re: t"),
        (4, "<4@x>", "<3@x> <6@x>", "Re: t"),
        (5, "<23@x>", "<3@x> <6@x> <4@x>", "Re: t"),
        (6, "<44@x>", "<3@x> <6@x>", "Re: t"),
        (7, "<7@x>", "<3@x> <6@x>\r\n <44@x>", "Re: t"),
        (8, "<96@x>", "<3@x> <6@x> <44@x> <7@x>", "RE: [Fwd: t]"),
    ]
    for n, mid, refs, subject in tree:
        extra = f"Message-ID: {mid}\r\n" + (f"References: {refs}\r\n" if refs else "")
        env.deliver("s1", "x@remote.test", [user],
                    msg(subject=subject, date=f"Mon, 2 Mar 2026 10:00:{n:02d} +0000",
                        extra=extra))
    c = env.imap("s1", user=user, password=PW)
    ok(c.select("INBOX"))
    assert thread(c, "REFERENCES", "UTF-8", "ALL") == "(1)(2 3 (4 5)(6 7 8))"
    assert thread(c, "ORDEREDSUBJECT", "US-ASCII", "ALL") == "(1)(2 (3)(4)(5)(6)(7)(8))"
    assert thread(c, "REFERENCES", "UTF-8", "NOT", "3") == "(1)(2 (4 5)(6 7 8))"
    assert thread(c, "references", "UTF-8", "SUBJECT", "nothing-like-this") == ""
    typ, data = c.fetch("1:8", "(UID)")
    uids = [int(re.search(rb"UID (\d+)", d).group(1)) for d in data]
    assert thread(c, "REFERENCES", "UTF-8", "2:3", uid=True) == f"({uids[1]} {uids[2]})"
    typ, data = c._simple_command("THREAD", "REFERENCES", "KOI8-R", "ALL")
    assert typ == "NO" and b"BADCHARSET" in data[0], (typ, data)
    for bad in (("SUBJECT", "UTF-8", "ALL"), ("REFERENCES", "UTF-8")):
        try:
            typ, data = c._simple_command("THREAD", *bad)
        except imaplib_error:
            typ = "BAD"
        assert typ == "BAD", (bad, typ)
    typ, data = c.capability()
    for cap in ("THREAD=REFERENCES", "THREAD=ORDEREDSUBJECT"):
        assert cap in data[0].decode().split(), data
    c.logout()


def test_thread_big(env):
    """300 messages: replies with References, In-Reply-To only, missing
    parents, loops, duplicate and missing Message-IDs, Re:/Fwd: subjects
    without links; checked against the model above."""
    user = f"dave@{D}"
    rng = random.Random(2256)
    lm = env.lmtp("s1")
    topics = ["Budget", "Lunch", "Release", "caf\u00e9", "Minutes", "Zebra", "Offsite"]
    for i in range(300):
        mid = f"<m{i}@t>" if rng.random() > 0.05 else None
        if rng.random() < 0.05:
            mid = f"<m{rng.randrange(max(i, 1))}@t>"          # duplicate
        extra = f"Message-ID: {mid}\r\n" if mid else ""
        kind = rng.random()
        refs = []
        if i > 0 and kind < 0.5:                               # a reply chain
            parent = rng.randrange(i)
            refs = [f"<m{rng.randrange(parent + 1)}@t>" for _ in range(rng.randrange(3))]
            refs.append(f"<m{parent}@t>")
        elif kind < 0.6:                                       # missing parents
            refs = [f"<gone{rng.randrange(10)}@t>"]
        elif kind < 0.65:                                      # loops, self
            refs = [f"<m{rng.randrange(300)}@t>", f"<m{i}@t>", f"<m{rng.randrange(300)}@t>"]
        if refs and rng.random() < 0.15:
            extra += f"In-Reply-To: {refs[-1]}\r\n"                 # In-Reply-To only
        elif refs:
            extra += "References: " + "\r\n ".join(refs) + "\r\n"
        if rng.random() < 0.03:
            extra += "References: broken, no ids\r\n"
        subject = rng.choice(["", "Re: ", "Fwd: ", "RE: [list] ", "[list] "]) + rng.choice(topics)
        date = None if rng.random() < 0.05 else \
            f"Tue, {rng.randint(1, 28)} Apr 2026 {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00 +0200"
        env.deliver("s1", "x@remote.test", [user], msg(subject=subject, date=date, extra=extra),
                    lm=lm)
    lm.quit()
    c = env.imap("s1", user=user, password=PW)
    ok(c.select("INBOX"))
    typ, data = c.fetch("1:300", "(UID INTERNALDATE BODY.PEEK[HEADER.FIELDS "
                        "(SUBJECT DATE MESSAGE-ID REFERENCES IN-REPLY-TO)])")
    assert typ == "OK", data
    msgs = []
    for item in data:
        if not isinstance(item, tuple):
            continue
        meta, head = item
        seq = int(meta.split()[0])
        idate = re.search(rb'INTERNALDATE "([^"]+)"', meta).group(1)
        arrival = int(time.mktime(imaplib.Internaldate2tuple(b'INTERNALDATE "' + idate + b'"')))
        fields = email.message_from_string(head.decode("utf-8"))
        subject = fields.get("Subject", "")
        b = base_subject(subject)
        msgs.append(dict(seq=seq, id=seq, subject=casemap(b),
                         reply=base_subject_reply(subject)[1],
                         date=sent_date(fields.get("Date"), arrival),
                         message_id=fields.get("Message-ID"),
                         references=fields.get("References"),
                         in_reply_to=fields.get("In-Reply-To")))
    assert len(msgs) == 300
    got = thread(c, "REFERENCES", "UTF-8", "ALL")
    want = thread_references(msgs)
    assert got == want, (got[:300], want[:300])
    # Not a trivial answer: threads were built and joined under dummies.
    assert got.count(")(") < 200 and "((" in got and re.search(r"\d \(", got), got[:300]
    assert thread(c, "ORDEREDSUBJECT", "UTF-8", "ALL") == thread_orderedsubject(msgs)
    c.logout()


def test(h):
    env = popstorelib.Env(h, shards=("s1",), popstore_extra="auth_fail_delay = 0\n")
    for user in ("alice", "bob", "carol", "dave"):
        env.add_user(f"{user}@{D}", PW, shard="s1")
    env.start("s1")
    test_capability(env)
    test_keys(env)
    test_big_folder(env)
    test_thread_small(env)
    test_thread_big(env)


if __name__ == "__main__":
    mtharness.main(test)
