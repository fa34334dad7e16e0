#!/usr/bin/env python3
"""test-store-replication-imap.py -- IMAP and POP3 changes on a replicated
shard survive the loss of its master (issue #38: "an IMAP tagged OK to
APPEND/STORE/EXPUNGE, a POP3 +OK to QUIT: only once the change is on two
disks"). One shard of three real mailtier-popstore sites (repl_shard.py),
a real slapd, imaplib and poplib straight to the sites; the client
reconnects to the shard's next site when its session breaks or a site
refuses it, as a user's client behind the MMP would:

  (a) an IMAP session APPENDs numbered messages, flags some (UID STORE
      +FLAGS \\Flagged) and expunges others (UID STORE \\Deleted + EXPUNGE),
      and the master is killed with -9 in the middle; the session goes on
      on the new master. Afterwards every APPEND answered OK is in INBOX
      (one in flight at the kill, or answered NO [UNAVAILABLE] and sent
      again, may be there once or twice: IMAP has no idempotent APPEND), every message whose STORE was answered OK
      carries \\Flagged, and none whose EXPUNGE was answered OK is back;
  (b) a POP3 session deletes two messages and QUIT is answered +OK; the
      master is killed at once; on the new master both are gone;
  (c) the killed site restarted: every site holds the mailbox the same
      (`mailtierctl store messages`: UIDVALIDITY, UIDNEXT, HIGHESTMODSEQ;
      each message's uid, MODSEQ, size, INTERNALDATE, UIDL and flags).

Skipped when mailtier-popstore is not built."""

import imaplib
import poplib
import re
import time

import mtharness
import repl_shard

D = "example.test"
USER = f"alice@{D}"
PW = "pw-repl-imap"


class Client:
    """An IMAP session on whichever site serves, reconnecting on failure."""

    def __init__(self, shard):
        self.shard = shard
        self.imap = None
        self.site = None

    def connect(self, budget=60.0):
        deadline = time.monotonic() + budget
        while time.monotonic() < deadline:
            for s in self.shard.sites:
                d = self.shard.daemons.get(s)
                if d is None or not d.running():
                    continue
                try:
                    imap = imaplib.IMAP4("127.0.0.1", self.shard.imap[s], timeout=10)
                    imap.login(USER, PW)
                    imap.select("INBOX")
                    self.imap, self.site = imap, s
                    return
                except (OSError, imaplib.IMAP4.error, EOFError):
                    pass
            time.sleep(0.1)
        raise AssertionError("no site took the IMAP session")

    def run(self, fn):
        """fn(imap) until it completes; a broken session or a NO reconnects
        and repeats it. Returns (result, whether an earlier try may have
        taken effect: a broken session, or a NO [UNAVAILABLE] "not
        replicated", whose change the master committed without a replica's
        acknowledgement and may keep)."""
        uncertain = False
        for _ in range(50):
            if self.imap is None:
                self.connect()
            try:
                return fn(self.imap), uncertain
            except (OSError, imaplib.IMAP4.abort, EOFError, imaplib.IMAP4.error):
                uncertain = True
            try:
                self.imap.logout()
            except Exception:
                pass
            self.imap = None
            time.sleep(0.1)
        raise AssertionError("an IMAP command failed 50 times")


def message(n):
    return (f"From: sender@{D}\r\nTo: {USER}\r\nSubject: imap-{n:04d}\r\n"
            f"Message-ID: <imap-{n}@test>\r\n\r\nmessage {n}\r\n").encode()


def append(n):
    def fn(imap):
        typ, data = imap.append("INBOX", None, None, message(n))
        if typ != "OK":
            raise imaplib.IMAP4.error(f"APPEND {n}: {typ} {data}")
        return True
    return fn


def uid_of(imap, n):
    typ, data = imap.uid("SEARCH", "HEADER", "Subject", f"imap-{n:04d}")
    if typ != "OK":
        raise imaplib.IMAP4.error(f"SEARCH: {typ} {data}")
    uids = data[0].split()
    return uids[0].decode() if uids else None


def flag(n):
    def fn(imap):
        uid = uid_of(imap, n)
        typ, data = imap.uid("STORE", uid, "+FLAGS", "(\\Flagged)")
        if typ != "OK":
            raise imaplib.IMAP4.error(f"STORE {n}: {typ} {data}")
        return True
    return fn


def expunge(n):
    def fn(imap):
        uid = uid_of(imap, n)
        if uid is None:
            return True         # an earlier try of this expunge took effect
        typ, data = imap.uid("STORE", uid, "+FLAGS", "(\\Deleted)")
        if typ == "OK":
            typ, data = imap.expunge()
        if typ != "OK":
            raise imaplib.IMAP4.error(f"EXPUNGE {n}: {typ} {data}")
        return True
    return fn


def inbox(imap):
    """number -> list of flag strings, one per copy."""
    typ, data = imap.fetch("1:*", "(FLAGS BODY.PEEK[HEADER.FIELDS (SUBJECT)])")
    out = {}
    if typ != "OK" or data in ([None], []):
        return out
    for item in data:
        if not isinstance(item, tuple):
            continue
        m = re.search(rb"imap-(\d+)", item[1])
        flags = re.search(rb"FLAGS \(([^)]*)\)", item[0])
        if m:
            out.setdefault(int(m.group(1)), []).append(
                flags.group(1).decode() if flags else "")
    return out


def test(h):
    repl_shard.require_popstore()
    ds = h.directory_up(shards=("s1",))
    shard = repl_shard.Shard(h, ds["dir"])
    shard.write_conf(popstore="allow_plaintext_auth = yes\nreplication_ack_timeout = 1s\n")
    h.ctl("users", "add", USER, "--shard", "s1", config=shard.conf, input=PW + "\n")
    shard.start_group()

    # (a) APPEND, STORE, EXPUNGE with the master killed in the middle.
    c = Client(shard)
    appended, maybe, flagged, expunged = set(), set(), set(), set()
    killed = None
    for n in range(80):
        if n == 40:
            killed = c.site
            shard.daemons[killed].kill()
            h.note(f"killed the master {killed} after {len(appended)} APPENDs")
        _, uncertain = c.run(append(n))
        appended.add(n)
        if uncertain:
            maybe.add(n)
        if n % 5 == 4:
            c.run(flag(n - 2))
            flagged.add(n - 2)
        if n % 7 == 6 and (n - 3) not in flagged:
            c.run(expunge(n - 3))
            expunged.add(n - 3)
    assert c.site != killed, "the session did not move to another site"
    box, _ = c.run(inbox)
    missing = sorted(n for n in appended - expunged if n not in box)
    twice = sorted(n for n, copies in box.items() if len(copies) > 1 and n not in maybe)
    unflagged = sorted(n for n in flagged if n in box and
                       not all("\\Flagged" in f for f in box[n]))
    back = sorted(n for n in expunged if n in box)
    assert not missing, f"APPENDs answered OK but missing: {missing}"
    assert not twice, f"stored twice: {twice}"
    assert not unflagged, f"STOREs answered OK but not there: {unflagged}"
    assert not back, f"EXPUNGEs answered OK but back: {back}"
    print(f"IMAP: master {killed} killed mid-session; on {c.site}: {len(appended)} APPENDs, "
          f"{len(flagged)} STOREs, {len(expunged)} EXPUNGEs answered OK all hold "
          f"({len(maybe)} APPEND in flight at the kill)")
    try:
        c.imap.logout()
    except Exception:
        pass
    shard.start(killed)

    # (b) POP3 QUIT answered +OK, then the master killed at once.
    master = shard.master()
    time.sleep(1)
    p = poplib.POP3("127.0.0.1", shard.pop3[master], timeout=15)
    p.user(USER)
    p.pass_(PW)
    gone = []
    for i in (1, 2):
        top = b"\n".join(p.top(i, 0)[1])
        gone.append(int(re.search(rb"imap-(\d+)", top).group(1)))
        p.dele(i)
    assert p.quit().startswith(b"+OK")
    shard.daemons[master].kill()
    c = Client(shard)
    c.connect()
    assert c.site != master
    box, _ = c.run(inbox)
    assert not any(n in box for n in gone), f"POP3 deletions answered +OK came back: {gone}"
    print(f"POP3: QUIT +OK deleting {gone} on {master}, master killed at once; "
          f"on {c.site} both are gone")
    c.imap.logout()

    # (c) The killed site back: every site holds the mailbox the same,
    # UIDVALIDITY, UIDNEXT, HIGHESTMODSEQ and each message's uid, MODSEQ,
    # UIDL and flags.
    shard.start(master)
    listing = shard.same_on_every_site(USER, timeout=60)
    lines = listing.splitlines()
    assert lines[0].startswith("folder INBOX "), lines[0]
    assert any("\\Flagged" in line for line in lines), "no flagged message listed"
    print(f"every site the same: {lines[0]}")


if __name__ == "__main__":
    mtharness.main(test)
