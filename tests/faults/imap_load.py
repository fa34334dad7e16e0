"""imap_load.py -- IMAP changes through the MMP while faults.py kills
daemons, and the check that every acknowledged one survived.

One thread runs short IMAP sessions through the MMP's IMAP port (LOGIN,
SELECT INBOX, one APPEND, then now and then a STORE +FLAGS (\\Flagged) or
a STORE +FLAGS (\\Deleted) and UID EXPUNGE of an earlier message, LOGOUT)
for accounts on every shard, while the suite kills the MMP or a store. It
records what was answered OK:

  APPEND ... OK [APPENDUID v u]   the message must be there, with UID u
  UID STORE u +FLAGS (\\Flagged)   it must carry \\Flagged
  UID EXPUNGE u                   it must be gone

A command whose answer never came (the connection died under it) may or
may not have been applied: its message is no longer judged (an EXPUNGE or
\\Deleted in doubt), or the flag is not expected (a \\Flagged in doubt).
After the fault, `check()` reads every account (UID FETCH 1:* (UID FLAGS
BODY.PEEK[HEADER.FIELDS (SUBJECT)])) and returns the problems: an
acknowledged APPEND missing or under another UID, a flag lost, an expunged
message back.

Trust boundary: test code; the servers are ours, their answers checked.
RFC 9051 6.3.12 (APPEND), 6.4.6 (STORE), 6.4.9 (UID EXPUNGE via UIDPLUS,
RFC 4315 APPENDUID)."""

import imaplib
import random
import re
import threading
import time


class ImapLedger:
    def __init__(self, port, accounts, seed):
        self.port = port
        self.accounts = accounts            # [(address, password)]
        self.rng = random.Random(seed)
        self.present = {a: {} for a, _ in accounts}   # subject -> uid (acked)
        self.flagged = {a: set() for a, _ in accounts}  # subjects acked \Flagged
        self.expunged = {a: {} for a, _ in accounts}  # subject -> uid (acked gone)
        self.counts = {"append": 0, "store": 0, "expunge": 0, "sessions": 0,
                       "failed_sessions": 0}
        self.n = 0
        self.stop_flag = threading.Event()
        self.thread = None

    def start(self):
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def stop(self):
        self.stop_flag.set()
        if self.thread is not None:
            self.thread.join(60)

    def _run(self):
        i = 0
        while not self.stop_flag.is_set():
            address, password = self.accounts[i % len(self.accounts)]
            i += 1
            try:
                self._session(address, password)
                self.counts["sessions"] += 1
            except (OSError, EOFError, imaplib.IMAP4.error, imaplib.IMAP4.abort):
                self.counts["failed_sessions"] += 1
                time.sleep(0.2)
            time.sleep(0.05)

    def _doubt(self, address, subject, flag_only=False):
        """An answer that never came: stop judging what it touched."""
        self.flagged[address].discard(subject)
        if not flag_only:
            self.present[address].pop(subject, None)

    def _session(self, address, password):
        m = imaplib.IMAP4("127.0.0.1", self.port, timeout=10)
        try:
            m.login(address, password)
            m.select("INBOX")
            self.n += 1
            subject = f"imapfault-{self.n}-{self.rng.randrange(1 << 30)}"
            body = f"Subject: {subject}\r\n\r\n{subject}\r\n".encode()
            typ, data = m.append("INBOX", None, None, body)
            got = re.search(rb"APPENDUID \d+ (\d+)", data[0] or b"") if typ == "OK" else None
            if got:
                self.present[address][subject] = int(got.group(1))
                self.counts["append"] += 1
            known = list(self.present[address].items())
            if known and self.rng.random() < 0.4:
                subj, uid = self.rng.choice(known)
                try:
                    typ, _ = m.uid("STORE", str(uid), "+FLAGS", "(\\Flagged)")
                except (OSError, EOFError, imaplib.IMAP4.abort):
                    self._doubt(address, subj, flag_only=True)
                    raise
                if typ == "OK":
                    self.flagged[address].add(subj)
                    self.counts["store"] += 1
            if len(known) > 3 and self.rng.random() < 0.3:
                subj, uid = self.rng.choice(known)
                try:
                    typ, _ = m.uid("STORE", str(uid), "+FLAGS.SILENT", "(\\Deleted)")
                    if typ == "OK":
                        typ, _ = m.uid("EXPUNGE", str(uid))
                except (OSError, EOFError, imaplib.IMAP4.abort):
                    self._doubt(address, subj)
                    raise
                if typ == "OK":
                    self.present[address].pop(subj, None)
                    self.flagged[address].discard(subj)
                    self.expunged[address][subj] = uid
                    self.counts["expunge"] += 1
                else:
                    self._doubt(address, subj)
            m.logout()
        finally:
            try:
                m.shutdown()
            except Exception:
                pass

    def read_mailbox(self, address, password):
        """{subject: (uid, flags)} of the account's INBOX."""
        m = imaplib.IMAP4("127.0.0.1", self.port, timeout=30)
        try:
            m.login(address, password)
            typ, data = m.select("INBOX", readonly=True)
            out = {}
            if int(data[0]) == 0:
                return out
            typ, data = m.uid("FETCH", "1:*",
                              "(UID FLAGS BODY.PEEK[HEADER.FIELDS (SUBJECT)])")
            for part in data:
                if not isinstance(part, tuple):
                    continue
                uid = int(re.search(rb"UID (\d+)", part[0]).group(1))
                flags = re.search(rb"FLAGS \(([^)]*)\)", part[0])
                subject = part[1].decode("utf-8", "replace").strip()
                subject = subject[len("Subject: "):] if subject.startswith("Subject: ") else subject
                out[subject] = (uid, flags.group(1).decode() if flags else "")
            return out
        finally:
            m.logout()

    def check(self, bound=60.0):
        """The problems (strings) after the fault; retries the reads while
        the cluster is still coming back, up to bound seconds."""
        problems = []
        for address, password in self.accounts:
            deadline = time.monotonic() + bound
            while True:
                try:
                    box = self.read_mailbox(address, password)
                    break
                except (OSError, EOFError, imaplib.IMAP4.error, imaplib.IMAP4.abort) as e:
                    if time.monotonic() > deadline:
                        problems.append(f"imap: {address}: cannot read the mailbox: {e}")
                        box = None
                        break
                    time.sleep(0.5)
            if box is None:
                continue
            for subject, uid in self.present[address].items():
                if subject not in box:
                    problems.append(f"imap: {address}: acknowledged APPEND {subject} "
                                    f"(UID {uid}) is missing")
                elif box[subject][0] != uid:
                    problems.append(f"imap: {address}: {subject} has UID {box[subject][0]}, "
                                    f"APPENDUID said {uid}")
                elif subject in self.flagged[address] and "\\Flagged" not in box[subject][1]:
                    problems.append(f"imap: {address}: acknowledged \\Flagged on {subject} "
                                    f"is lost ({box[subject][1]})")
            for subject, uid in self.expunged[address].items():
                if subject in box:
                    problems.append(f"imap: {address}: acknowledged UID EXPUNGE of {subject} "
                                    f"(UID {uid}) undone")
        return problems

    def summary(self):
        c = self.counts
        return (f"imap: {c['sessions']} sessions ({c['failed_sessions']} failed), "
                f"acknowledged {c['append']} APPEND, {c['store']} STORE, "
                f"{c['expunge']} EXPUNGE")
