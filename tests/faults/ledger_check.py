#!/usr/bin/env python3
"""ledger_check.py -- check mailtier-load message ledgers (loadgen/ledger.h):
was every message the servers acknowledged with 250 delivered to every one
of its recipients exactly once and byte-exact?

    ledger_check.py [--json] [--details N] FILE...

FILEs are the ledgers of one fault's load run, of the sink that ran during
the drain, and of the drain's POP3 sweep (faults.py writes the last one in
the same format). Each acknowledged message's recipient copies are counted:

- delivered: seen at least once (POP3 RETR of the recipient's mailbox, or
  the sink with that RCPT) -- the copy, not the POP3 deletion, is what the
  MTA acknowledged;
- lost: never seen, after the drain (which fetched every mailbox);
- duplicated: more than one stored copy. A RETR in a POP3 session whose
  QUIT was never answered +OK is not a copy of its own (its DELE was rolled
  back, RFC 1939 6, so the message is seen again later); a copy is a RETR in
  a committed session or a sink arrival. A RETR seen after a committed one
  (an acknowledged deletion that came back) is a duplicate too;
- corrupted: a copy whose digest differs from the digest sent;
- misdelivered: a copy in a mailbox (or to a sink recipient) the message
  was not addressed to;
- bounced: not delivered, but a delivery report about it (a DSN with
  Action: failed for that recipient, in the sender's mailbox, or the
  postmaster's copy of such a report that could not be returned) was
  found: the message reached a person, so it is not lost. A "bounce ID
  RCPT" line says so (faults.py's drain writes them, rx_bounces).

Unacknowledged messages (the data went out, no 250) may arrive or not; more
than one copy or a wrong digest among them is reported, not failed.
Copies with ids of no message in the files (another run's, a fill's, a
probe's) are only counted as foreign.

Exit status: 0 when nothing acknowledged was lost, duplicated, corrupted or
misdelivered; 1 otherwise; 2 on a usage error or a malformed ledger.

Trust boundary: the ledgers are written by mailtier-load and the drain;
a malformed line is an error (exit 2), never skipped silently.
"""

import argparse
import collections
import json
import sys


class LedgerError(Exception):
    pass


class Ledger:
    """Everything the files say, merged."""

    def __init__(self):
        self.acked = {}        # id -> (time, digest, [rcpt])
        self.unacked = {}      # id -> (time, digest or None, [rcpt])
        self.copies = collections.defaultdict(list)  # (id, rcpt) -> [(time, digest, session or None)]
        self.committed = set()
        self.bounced = set()   # (id, rcpt) a failure report was found for
        self.foreign = 0

    def read(self, path):
        with open(path, encoding="ascii", errors="replace") as f:
            for n, line in enumerate(f, 1):
                self._line(path, n, line.rstrip("\n"))

    def _line(self, path, n, line):
        f = line.split(" ")
        where = f"{path}:{n}"
        if not line or f[0] == "ledger":
            return
        if len(f) < 2:
            raise LedgerError(f"{where}: malformed line")
        try:
            t = float(f[0])
        except ValueError:
            raise LedgerError(f"{where}: bad time {f[0]!r}")
        kind = f[1]
        if kind in ("sent", "unacked") and len(f) == 5:
            mid, digest, rcpts = f[2], f[3], _rcpts(f[4])
            if kind == "sent":
                if mid in self.acked:
                    raise LedgerError(f"{where}: id {mid} sent twice")
                self.acked[mid] = (t, digest, rcpts)
            else:
                self.unacked[mid] = (t, None if digest == "-" else digest, rcpts)
        elif kind == "pop" and len(f) == 6:
            self.copies[(f[2], f[3].lower())].append((t, f[4], f[5]))
        elif kind == "sink" and len(f) == 5:
            for rcpt in _rcpts(f[4]):
                self.copies[(f[2], rcpt)].append((t, f[3], None))
        elif kind == "commit" and len(f) == 3:
            self.committed.add(f[2])
        elif kind == "bounce" and len(f) == 4:
            self.bounced.add((f[2], f[3].lower()))
        else:
            raise LedgerError(f"{where}: malformed {kind!r} line")

    def _count(self, seen):
        """(stored copies, resurrected): see the module's doc."""
        seen = sorted(seen, key=lambda c: c[0])
        copies = 0
        resurrected = False
        committed_before = False
        for _, _, session in seen:
            final = session is None or session in self.committed
            if committed_before and not final:
                resurrected = True
            if final:
                copies += 1
                committed_before = committed_before or session is not None
        if copies == 0 and seen:
            copies = 1   # seen only in uncommitted sessions: still stored, or
                         # deleted with the +OK lost; one copy either way
        return copies, resurrected

    def check(self, details=20):
        r = collections.OrderedDict(
            acknowledged=len(self.acked), acknowledged_copies=0,
            delivered=0, bounced=0, lost=0, duplicated=0, corrupted=0, misdelivered=0,
            unacknowledged=len(self.unacked), unacknowledged_delivered=0,
            unacknowledged_duplicated=0, unacknowledged_corrupted=0,
            foreign=0, problems=[], duplicates=[])
        addressed = set()

        def problem(what, mid, rcpt, info):
            if len(r["problems"]) < details:
                r["problems"].append(f"{what}: id {mid} to {rcpt} {info}")

        for mid, (t, digest, rcpts) in self.acked.items():
            for rcpt in rcpts:
                addressed.add((mid, rcpt))
                r["acknowledged_copies"] += 1
                seen = self.copies.get((mid, rcpt), [])
                if not seen and (mid, rcpt) in self.bounced:
                    r["bounced"] += 1
                    continue
                if not seen:
                    r["lost"] += 1
                    problem("lost", mid, rcpt, f"(acknowledged at {t:.3f})")
                    continue
                r["delivered"] += 1
                copies, resurrected = self._count(seen)
                if copies > 1 or resurrected:
                    r["duplicated"] += 1
                    r["duplicates"].append(dict(
                        id=mid, rcpt=rcpt, sent_at=t, copies=copies, resurrected=resurrected,
                        intact=all(c[1] == digest for c in seen),
                        seen_at=sorted(c[0] for c in seen)))
                    where = ", ".join("%.3f/%s" % (c[0], c[2] or "sink") for c in seen)
                    came_back = ", a deletion came back" if resurrected else ""
                    problem("duplicated", mid, rcpt,
                            f"({copies} copies{came_back}; seen at {where})")
                bad = [c for c in seen if c[1] != digest]
                if bad:
                    r["corrupted"] += 1
                    problem("corrupted", mid, rcpt, f"(sent {digest}, got {bad[0][1]} at {bad[0][0]:.3f})")
        for mid, (t, digest, rcpts) in self.unacked.items():
            for rcpt in rcpts:
                addressed.add((mid, rcpt))
                seen = self.copies.get((mid, rcpt), [])
                if not seen:
                    continue
                r["unacknowledged_delivered"] += 1
                copies, resurrected = self._count(seen)
                if copies > 1 or resurrected:
                    r["unacknowledged_duplicated"] += 1
                if digest is not None and any(c[1] != digest for c in seen):
                    r["unacknowledged_corrupted"] += 1
                if digest is None:
                    # The final "." never went out: it cannot have arrived.
                    r["unacknowledged_corrupted"] += 1
        for (mid, rcpt), seen in self.copies.items():
            if (mid, rcpt) in addressed:
                continue
            if mid in self.acked or mid in self.unacked:
                r["misdelivered"] += len(seen)
                problem("misdelivered", mid, rcpt, f"({len(seen)} copies)")
            else:
                r["foreign"] += len(seen)
        r["ok"] = not (r["lost"] or r["duplicated"] or r["corrupted"] or r["misdelivered"])
        return r


def _rcpts(field):
    return [] if field == "-" else [a.lower() for a in field.split(",")]


def check_files(paths, details=20):
    ledger = Ledger()
    for p in paths:
        ledger.read(p)
    return ledger.check(details)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("--details", type=int, default=20,
                    help="list at most this many problems (20)")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
    try:
        r = check_files(a.files, a.details)
    except (OSError, LedgerError) as e:
        print(f"ledger_check: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(r, indent=1))
    else:
        for k, v in r.items():
            if k not in ("problems", "duplicates"):
                print(f"{k:28} {v}")
        for p in r["problems"]:
            print("  " + p)
    return 0 if r["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
