#!/usr/bin/env python3
"""test-bdb-repl.py -- Berkeley DB replication through lib-bdb/bdb-repl.c
with real processes: three tests/integration/bdb-repl-node sites, each a
transactional environment in its own directory on a loopback port
(mtharness's free ports, below the ephemeral range), one group of three
electable sites with the QUORUM ack policy.

1. The group forms: the creator becomes master, the others join as clients.
2. N records written on the master, one transaction each, every commit
   acknowledged by a replica ("ok", never "permfailed"); then more from
   several threads at once.
3. kill -9 of the master: one of the two others is elected within a few
   seconds and holds every acknowledged record.
4. With the old master down the new one keeps taking acknowledged writes
   (the remaining replica acks) across several log files and checkpoints;
   automatic log removal is off, so no log file goes.
5. The killed site restarts (no creator flag), rejoins as a client and
   catches up from the log (no internal init: a full copy would show).
6. Log retention: an hour's retention removes nothing; a retention of 0
   removes the files no longer needed.
7. A hung master (SIGSTOP, no FIN): the others elect by the missing
   heartbeats within a few seconds; resumed, it is demoted (repmgr demotes
   both masters and elects again) and the group agrees on one master that
   holds every record.
8. Two of three sites gone (one killed -9, one closed): every write on the
   master reports PERM_FAILED, none a success, from one thread or several.
Every wait is bounded; the figures (election time, catch-up) are printed.
"""

import os
import queue
import signal
import subprocess
import sys
import threading
import time

import mtharness

N_RECORDS = 200
ELECTION_BOUND = 10.0   # seconds from kill -9 to a new master
FILL = 300              # records of FILL_SIZE written while a site is away
FILL_SIZE = 1000
PAR_THREADS = 4         # concurrent committers
PAR_EACH = 50


class Node:
    """One bdb-repl-node process: commands on stdin, replies on stdout."""

    def __init__(self, h, index, sites, creator=False):
        self.h = h
        self.index = index
        self.sites = sites
        self.addr = sites[index]
        self.home = os.path.join(h.tmpdir, f"site{index}")
        os.makedirs(self.home, exist_ok=True)
        self.log_path = os.path.join(h.tmpdir, f"site{index}.log")
        self.proc = None
        self.start(creator)

    def start(self, creator=False):
        argv = [mtharness.binary("tests/integration/bdb-repl-node"),
                "-h", self.home, "-l", self.addr, "-s", ",".join(self.sites)]
        if creator:
            argv.append("-c")
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=log, text=True, bufsize=1, start_new_session=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc, self.lines),
                         daemon=True).start()

    @staticmethod
    def _read(proc, lines):
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    def reply(self, timeout=30.0):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"site{self.index}: no reply within {timeout} s")
        if line is None:
            raise AssertionError(f"site{self.index}: exited "
                                 f"({self.proc.poll()}) before replying")
        return line

    def cmd(self, line, timeout=30.0):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.reply(timeout)

    def role(self):
        fields = dict(kv.split("=", 1) for kv in self.cmd("role").split())
        return fields

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def quit(self):
        assert self.cmd("quit", timeout=30) == "bye"
        assert self.proc.wait(30) == 0, f"site{self.index} exit status"

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()


def wait_until(what, fn, timeout):
    """Call fn() until it returns a true value; that value, within timeout."""
    deadline = time.monotonic() + timeout
    while True:
        got = fn()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.1)


def test(h):
    ports = h.free_ports(3)
    sites = [f"127.0.0.1:{p}" for p in ports]
    nodes = []

    def cleanup():
        for n in nodes:
            if n.alive():
                n.proc.kill()
                n.proc.wait()
    h.add_cleanup(cleanup)

    def dump_logs():
        for n in nodes:
            print(f"----- site{n.index} ({n.addr}) -----", file=sys.stderr)
            print(n.log().rstrip("\n") or "(empty log)", file=sys.stderr)

    try:
        run(h, sites, nodes)
    except BaseException:
        dump_logs()
        raise


def run(h, sites, nodes):
    # 1. The group forms: the creator first, then the two joiners.
    nodes.append(Node(h, 0, sites, creator=True))
    assert nodes[0].reply(60) == "started"
    wait_until("site0 master", lambda: nodes[0].role()["role"] == "master", 15)
    nodes.append(Node(h, 1, sites))
    nodes.append(Node(h, 2, sites))
    for n in nodes[1:]:
        assert n.reply(60) == "started"
    wait_until("the master connected to both clients",
               lambda: nodes[0].role()["connected"] == "2", 30)
    for n in nodes[1:]:
        wait_until(f"site{n.index} synchronised",
                   lambda n=n: n.role()["role"] == "client" and
                   n.role()["startup_done"] == "1", 30)

    # 2. N records, each commit acknowledged by a replica.
    master = nodes[0]
    start = time.monotonic()
    for i in range(N_RECORDS):
        got = master.cmd(f"put k{i} v{i}")
        assert got == "ok", f"put k{i}: {got}"
    took = time.monotonic() - start
    print(f"{N_RECORDS} acknowledged commits in {took:.2f} s "
          f"({took / N_RECORDS * 1000:.2f} ms each)")
    assert master.role()["perm_failed"] == "0"
    # Concurrent committers (the store runs several executors): each
    # commit still waits for an ack covering it.
    start = time.monotonic()
    got = master.cmd(f"pfill par {PAR_EACH} 100 {PAR_THREADS}", timeout=120)
    assert got == f"fill ok={PAR_EACH * PAR_THREADS} permfailed=0 err=0", got
    took = time.monotonic() - start
    print(f"{PAR_EACH * PAR_THREADS} acknowledged commits from {PAR_THREADS} "
          f"threads in {took:.2f} s")

    # 3. kill -9 of the master; a new one within the bound, with every record.
    master.kill9()
    killed_at = time.monotonic()
    others = nodes[1:]

    def elected():
        for n in others:
            if n.role()["role"] == "master":
                return n
        return None
    new = wait_until("a new master", elected, ELECTION_BOUND + 5)
    election = time.monotonic() - killed_at
    print(f"new master site{new.index} {election * 1000:.0f} ms after kill -9")
    assert election <= ELECTION_BOUND, f"election took {election:.2f} s"
    other = [n for n in others if n is not new][0]
    wait_until("the other site follows the new master",
               lambda: other.role()["master"] == new.addr, 15)
    acked = N_RECORDS + PAR_EACH * PAR_THREADS
    assert new.cmd("count") == f"count {acked}"
    for i in range(N_RECORDS):
        got = new.cmd(f"get k{i}")
        assert got == f"value v{i}", f"new master: get k{i}: {got}"

    # 4. Writes go on with one replica; logs are kept across checkpoints.
    logs_before = int(new.cmd("logs").split()[1])
    for part in range(3):
        got = new.cmd(f"fill f{part}- {FILL // 3} {FILL_SIZE}", timeout=120)
        assert got == f"fill ok={FILL // 3} permfailed=0 err=0", got
        assert new.cmd("checkpoint") == "ok"
    logs_after = int(new.cmd("logs").split()[1])
    print(f"new master log files: {logs_before} -> {logs_after}")
    assert logs_after > logs_before and logs_after >= 3, \
        f"log files {logs_before} -> {logs_after}"
    total = acked + FILL

    # 5. The killed site rejoins as a client and catches up from the log.
    old = nodes[0]
    restarted_at = time.monotonic()
    old.start(creator=False)
    assert old.reply(60) == "started"

    def caught_up():
        r = old.role()
        return (r["role"] == "client" and r["startup_done"] == "1" and
                r["master"] == new.addr and
                old.cmd("count") == f"count {total}") and r
    r = wait_until("the restarted site caught up", caught_up, 30)
    catchup = time.monotonic() - restarted_at
    print(f"restarted site0 caught up ({total} records) in {catchup:.2f} s, "
          f"internal inits {r['inits']}")
    assert r["inits"] == "0", "caught up by a full copy, not from the log"
    for key, value in (("k0", "v0"), (f"k{N_RECORDS - 1}", f"v{N_RECORDS - 1}")):
        assert old.cmd(f"get {key}") == f"value {value}"
    got = new.cmd("put after-rejoin yes")
    assert got == "ok", got

    # 6. Retention, on the client that stayed up (a master refuses any
    # archiving for 30 s after a connection to a site broke: repmgr_net.c
    # MASTER_UPDATE, DB_REGENV_TIMEOUT; and it keeps what its connected
    # clients have not acknowledged). Checkpoints come from the master.
    assert new.cmd("checkpoint") == "ok"
    assert new.cmd("checkpoint") == "ok"
    assert new.cmd("put after-checkpoint yes") == "ok"
    wait_until("the checkpoints reached the client",
               lambda: other.cmd("get after-checkpoint") == "value yes", 10)
    assert other.cmd("archive 3600") == "archived 0"
    time.sleep(1.1)
    logs = int(other.cmd("logs").split()[1])
    removed = int(other.cmd("archive 0").split()[1])
    print(f"retention 0 removed {removed} of {logs} log files on a client")
    assert 0 < removed < logs
    assert other.cmd("get k0") == "value v0"

    # 7. A master that hangs (SIGSTOP: no FIN, as a host lost without a
    # word): the others notice by the missing heartbeats and elect; when it
    # resumes it finds a newer master and is demoted to client.
    new.proc.send_signal(signal.SIGSTOP)
    stopped_at = time.monotonic()
    pair = [old, other]

    def elected_of_pair():
        for n in pair:
            if n.role()["role"] == "master":
                return n
        return None
    newest = wait_until("a master after SIGSTOP", elected_of_pair, 15)
    hung = time.monotonic() - stopped_at
    print(f"master hung (SIGSTOP): site{newest.index} elected after "
          f"{hung:.2f} s (heartbeat monitor 2 s + election)")
    assert hung <= ELECTION_BOUND, f"took {hung:.2f} s"
    new.proc.send_signal(signal.SIGCONT)
    # Resumed, it meets a master of a newer generation: repmgr 5.3 demotes
    # both masters (DUPMASTER) and elects again, so wait for the group to
    # agree on one master, with the resumed site a client.
    resumed_at = time.monotonic()

    def settled():
        roles = {n: n.role() for n in nodes}
        masters = [n for n, r in roles.items() if r["role"] == "master"]
        if (len(masters) == 1 and roles[new]["role"] == "client" and
                all(r["master"] == masters[0].addr for r in roles.values())):
            return masters[0], roles
        return None
    newest, roles = wait_until("one master after the hung one resumed",
                               settled, 20)
    print(f"hung master resumed: site{newest.index} master after "
          f"{time.monotonic() - resumed_at:.2f} s; demotions " +
          ", ".join(f"site{n.index}={r['demotions']}"
                    for n, r in roles.items()))
    assert int(roles[new]["demotions"]) >= 1
    # The tier's callback saw it, on the notifier thread.
    assert "role-changed master -> client" in new.log()
    assert newest.cmd("put after-hang yes") == "ok"
    for n in nodes:
        if n is not newest:
            wait_until(f"site{n.index} applies the master's writes",
                       lambda n=n: n.cmd("get after-hang") == "value yes", 10)
            assert n.cmd("count") == newest.cmd("count")

    # 8. Two of three sites gone: every write PERM_FAILED, none a success.
    # One killed -9, one closed cleanly (its exit status checks the
    # client's shutdown, and LeakSanitizer in a sanitizer build).
    rest = [n for n in nodes if n is not newest]
    rest[0].kill9()
    rest[1].quit()
    results = [newest.cmd(f"put lost{i} x") for i in range(20)]
    print(f"with 2 of 3 sites gone: {results.count('permfailed')} of 20 "
          "writes PERM_FAILED")
    assert results == ["permfailed"] * 20, results
    got = newest.cmd(f"pfill lostpar 10 100 {PAR_THREADS}", timeout=120)
    print(f"concurrent, 2 of 3 sites gone: {got}")
    assert got == f"fill ok=0 permfailed={10 * PAR_THREADS} err=0", got
    assert int(newest.role()["perm_failed"]) >= 20
    newest.quit()


if __name__ == "__main__":
    mtharness.main(test)
