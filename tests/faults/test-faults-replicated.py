#!/usr/bin/env python3
"""test-faults-replicated.py -- the crash faults with replication on (issue
#38, "the existing fault suite ... keep passing with replication on"):
tests/faults/faults.py --quick --replicas 3 --only kill-shard1,kill-mta,kill-mmp.

Each shard is a replication group of three mailtier-popstore sites
(`mailtierctl cluster up --replicas 3`). Under the suite's steady SMTP/POP3
load and its IMAP APPEND/STORE/EXPUNGE through the MMP: 2 rounds of kill -9
of shard1's master at that moment (another site is elected, the MTA and
the MMP follow it, `cluster up` restarts the killed site as a replica), then
of the MTA and of the MMP with replicated shards behind them. Every
acknowledged message delivered exactly once and byte-exact, every IMAP
change answered OK present, no other daemon (site) died, memory back to
baseline. Exit 0 pass, 1 fail, 77 skip (no slapd).

--allow-redelivery remote: as in test-faults-quick.py (a relayed copy sent
twice after a kill of the MTA is at-least-once delivery, RFC 5321 6.1)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import faults  # noqa: E402

if __name__ == "__main__":
    sys.exit(faults.main(["--quick", "--replicas", "3",
                          "--only", "kill-shard1,kill-mta,kill-mmp",
                          "--allow-redelivery", "remote"]))
