#!/usr/bin/env python3
"""test-popstore-diskfull.py -- mailtier-popstore on a full disk.

The store lives on a small file system made by the test (mounting needs
root: skipped otherwise): an 80 MB tmpfs, and a 96 MB ext4 image on a loop
device where the kernel offers one. On each, with a 4 MB cache (the
store takes about 45 MB at start: its regions, its space reserve and the
preallocated ends of its database files):

  - 4 LMTP clients deliver while a filler file takes every free block;
    deliveries then get 452 4.3.1 (temporary), and the daemon neither
    crashes (the old defect: SIGBUS on a region page) nor stops serving;
  - POP3 still logs in, lists and reads every message byte for byte; QUIT
    after DELE answers -ERR [SYS/TEMP] and deletes nothing;
  - once the filler is gone the store recovers by itself (no restart):
    deliveries and deletions work again;
  - every message acknowledged with 250 is there exactly once, byte for
    byte, also after a restart; none answered 452 is;
  - expunged bodies queued for the purger (lazy expunge, purge_delay 2s)
    when the disk fills are not lost: they stay queued while it is full and
    are purged once space returns (the daemon's purged= counter).
"""

import errno
import os
import shutil
import subprocess
import threading
import time

import mtharness
import popstorelib
from popstorelib import message, strip_trace

D = popstorelib.DOMAIN
ALICE = f"alice@{D}"
CLIENTS = 4


def fill(path):
    """Write path until the file system is full (it may be already: the
    deliveries running meanwhile can fill it first)."""
    try:
        f = open(path, "wb", buffering=0)  # unbuffered: nothing left to
        # flush (and fail) at close
    except OSError as e:
        if e.errno == errno.ENOSPC:
            return
        raise
    with f:
        chunk = b"\0" * 65536
        try:
            while True:
                f.write(chunk)
        except OSError:
            pass
        try:
            os.fsync(f.fileno())
        except OSError:
            pass


def mount_tmpfs(h, mnt):
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=80m", "tmpfs", mnt],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return f"cannot mount a tmpfs: {r.stderr.strip()}"
    h.add_cleanup(lambda: subprocess.run(["umount", "-l", mnt], capture_output=True))
    return None


def mount_ext4(h, mnt):
    if shutil.which("mkfs.ext4") is None:
        return "no mkfs.ext4"
    img = mnt + ".img"
    with open(img, "wb") as f:
        f.truncate(96 << 20)
    r = subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", img],
                       capture_output=True, text=True)
    if r.returncode == 0:
        r = subprocess.run(["mount", "-o", "loop", img, mnt],
                           capture_output=True, text=True)
    if r.returncode != 0:
        return f"cannot mount an ext4 image: {r.stderr.strip()}"
    h.add_cleanup(lambda: subprocess.run(["umount", "-l", mnt], capture_output=True))
    return None


class Ledger:
    """What the clients were told: acknowledged and refused messages."""

    def __init__(self):
        self.lock = threading.Lock()
        self.good = []          # (subject, bytes), in acknowledgement order
        self.refused = set()    # subjects answered 452 4.3.1

    def deliver(self, env, subject, body):
        m = message(subject, body)
        _, dr = env.deliver("s1", "s@remote.test", [ALICE], m)
        code, text = dr[0]
        with self.lock:
            if code == 250:
                self.good.append((subject, m))
            else:
                assert (code, text[:5]) == (452, b"4.3.1"), (subject, dr)
                self.refused.add(subject)
        return code


def subject_of(data):
    for line in data.split(b"\r\n"):
        if line.startswith(b"Subject: "):
            return line[9:].decode()
    raise AssertionError(data[:200])


def check_mailbox(env, ledger, password):
    """Every acknowledged message exactly once, byte for byte; no refused
    one. Order by uid = order of the durable commits, which for messages
    acknowledged by different clients at once is not the order the test
    saw the replies in: compare as a mapping."""
    p = env.pop("s1", ALICE, password)
    n = p.stat()[0]
    seen = {}
    for i in range(1, n + 1):
        data = strip_trace(b"\r\n".join(p.retr(i)[1]) + b"\r\n")
        subject = subject_of(data)
        assert subject not in ledger.refused, f"refused message stored: {subject}"
        assert subject not in seen, f"stored twice: {subject}"
        seen[subject] = data
    want = dict(ledger.good)
    assert set(seen) == set(want), (sorted(set(want) - set(seen)),
                                    sorted(set(seen) - set(want)))
    for subject, data in want.items():
        assert seen[subject] == data, f"content differs: {subject}"
    return p, n


def purged(d):
    """The daemon's purged= counter (SIGHUP logs the counters)."""
    d.reload()
    time.sleep(0.2)
    lines = [l for l in d.log().splitlines() if "stats when=reload" in l]
    return int(lines[-1].split(" purged=")[1].split()[0]) if lines else 0


def scenario(h, env, fs, mount):
    mnt = os.path.join(h.tmpdir, fs)
    os.mkdir(mnt)
    why = mount(h, mnt)
    if why is not None:
        h.note(f"{fs}: skipped: {why}")
        return False
    env.write_conf(db_homes={"s1": os.path.join(mnt, "store")})
    d = env.start("s1", name=f"popstore-{fs}")
    ledger = Ledger()
    body = b"full disk test line\r\n" * 1000        # ~21 KB

    for i in range(5):
        assert ledger.deliver(env, f"{fs} before {i}", body) == 250
    # Two deletions whose bodies wait 2 s for the purger: it finds the
    # disk full, so they must stay queued until space returns.
    p = env.pop("s1", ALICE, "pw-a")
    gone = []
    for i in (1, 2):
        gone.append(subject_of(strip_trace(b"\r\n".join(p.retr(i)[1]) + b"\r\n")))
        p.dele(i)
    assert p.quit().startswith(b"+OK")
    ledger.good = [g for g in ledger.good if g[0] not in gone]

    # Deliveries in flight while the disk fills: each client goes on
    # until it has been refused a few times. 8 MB of ballast first, so
    # there is space to give back even when the deliveries fill the disk
    # before the filler does.
    ballast = os.path.join(mnt, "ballast")
    with open(ballast, "wb") as f:
        f.write(b"\0" * (8 << 20))
        f.flush()
        os.fsync(f.fileno())
    errors = []

    def client(c):
        refused = 0
        try:
            for i in range(400):
                if ledger.deliver(env, f"{fs} client {c} msg {i}", body) != 250:
                    refused += 1
                    if refused >= 5:
                        return
        except Exception as e:      # reported by the main thread
            errors.append(e)
    threads = [threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    filler = os.path.join(mnt, "filler")
    fill(filler)
    for t in threads:
        t.join(120)
        assert not t.is_alive(), "a delivery hung"
    status = d.proc.poll()
    assert status is None, f"{fs}: the daemon died (status {status})"
    assert not errors, errors
    assert ledger.refused, "the disk never looked full"
    for i in range(5):              # still full: refused, not hung
        assert ledger.deliver(env, f"{fs} while full {i}", body) == 452
    h.note(f"{fs}: {len(ledger.good)} acknowledged, {len(ledger.refused)} refused")

    # POP3 reads everything; deletions cannot be made durable.
    p, n = check_mailbox(env, ledger, "pw-a")
    p.dele(1)
    p.dele(n)
    try:
        p.quit()
        raise AssertionError("QUIT answered +OK on a full disk")
    except popstorelib.poplib.error_proto as e:
        assert "[SYS/TEMP]" in str(e), e
    p, n2 = check_mailbox(env, ledger, "pw-a")     # nothing deleted
    assert n2 == n, (n2, n)
    p.quit()

    # Space returns: the store notices by itself.
    for path in (filler, ballast):
        if os.path.exists(path):
            os.unlink(path)
    deadline = time.monotonic() + 20
    i = 0
    while ledger.deliver(env, f"{fs} after {i}", body) != 250:
        assert time.monotonic() < deadline, "deliveries did not resume"
        i += 1
        time.sleep(0.2)
    for j in range(3):
        assert ledger.deliver(env, f"{fs} resumed {j}", body) == 250
    p, n = check_mailbox(env, ledger, "pw-a")
    first = subject_of(strip_trace(b"\r\n".join(p.retr(1)[1]) + b"\r\n"))
    p.dele(1)
    assert p.quit().startswith(b"+OK")
    ledger.good = [g for g in ledger.good if g[0] != first]
    check_mailbox(env, ledger, "pw-a")[0].quit()
    # Every expunged body purged, those queued while the disk was full too.
    deadline = time.monotonic() + 20
    while purged(d) < 3:
        assert time.monotonic() < deadline, f"{fs}: purged={purged(d)}, want 3"
        time.sleep(0.5)

    # Durable: the same after a restart (recovery at open).
    d.stop()
    d = env.start("s1", name=f"popstore-{fs}-again")
    check_mailbox(env, ledger, "pw-a")[0].quit()
    d.stop()
    log = d.log()
    assert "Berkeley DB panic" not in log, log
    return True


def test(h):
    if os.geteuid() != 0:
        raise mtharness.Skip("mounting a file system needs root")
    env = popstorelib.Env(h, shards=("s1",), popstore_extra="db_cache_size = 4M\npurge_delay = 2s\n")
    env.add_user(ALICE, "pw-a")
    ran = [fs for fs, mount in (("tmpfs", mount_tmpfs), ("ext4", mount_ext4))
           if scenario(h, env, fs, mount)]
    if not ran:
        raise mtharness.Skip("no file system could be mounted")


if __name__ == "__main__":
    mtharness.main(test)
