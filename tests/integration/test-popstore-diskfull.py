#!/usr/bin/env python3
"""test-popstore-diskfull.py -- mailtier-popstore on a full disk.

The store lives on a small tmpfs (mount needs root: skipped otherwise).
Deliveries succeed, then a filler file takes the free space:

  - LMTP deliveries get 452 4.3.1 (temporary), never 250;
  - POP3 still logs in and reads; QUIT after DELE answers
    -ERR [SYS/TEMP] and deletes nothing;
  - once the filler is gone, deliveries and deletions work again, every
    message acknowledged before is there, and nothing refused is.
"""

import os
import subprocess

import mtharness
import popstorelib
from popstorelib import message, strip_trace

D = popstorelib.DOMAIN
ALICE = f"alice@{D}"


def fill(path):
    """Write path until the file system is full."""
    with open(path, "wb") as f:
        chunk = b"\0" * 65536
        try:
            while True:
                f.write(chunk)
                f.flush()
        except OSError:
            pass
        try:
            os.fsync(f.fileno())
        except OSError:
            pass


def test(h):
    if os.geteuid() != 0:
        raise mtharness.Skip("mounting a tmpfs needs root")
    mnt = os.path.join(h.tmpdir, "fs")
    os.mkdir(mnt)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", mnt],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise mtharness.Skip(f"cannot mount a tmpfs: {r.stderr.strip()}")
    h.add_cleanup(lambda: subprocess.run(["umount", "-l", mnt], capture_output=True))

    env = popstorelib.Env(h, shards=("s1",), popstore_extra="db_cache_size = 4M\n")
    env.write_conf(db_homes={"s1": os.path.join(mnt, "store")})
    env.add_user(ALICE, "pw-a")
    d = env.start("s1")

    body = (b"full disk test line\r\n" * 1000)        # ~21 KB
    good = []
    for i in range(5):
        m = message(f"before {i}", body)
        _, dr = env.deliver("s1", "s@remote.test", [ALICE], m)
        assert dr[0][0] == 250, dr
        good.append(m)

    filler = os.path.join(mnt, "filler")
    fill(filler)
    refused = 0
    for i in range(20):
        m = message(f"while full {i}", body)
        _, dr = env.deliver("s1", "s@remote.test", [ALICE], m)
        code, text = dr[0]
        if code == 250:
            good.append(m)          # fit in what was left
            continue
        assert (code, text[:5]) == (452, b"4.3.1"), dr
        refused += 1
    assert refused > 0, "the disk never looked full"

    # POP3 works; deletions cannot be made durable: -ERR [SYS/TEMP].
    p = env.pop("s1", ALICE, "pw-a")
    n = p.stat()[0]
    assert n == len(good), (n, len(good))
    p.dele(1)
    try:
        p.quit()
        quit_ok = True
    except popstorelib.poplib.error_proto as e:
        assert "[SYS/TEMP]" in str(e), e
        quit_ok = False
    if quit_ok:
        good.pop(0)

    # Space returns: normal service.
    os.unlink(filler)
    m = message("after", body)
    _, dr = env.deliver("s1", "s@remote.test", [ALICE], m)
    assert dr[0][0] == 250, dr
    good.append(m)
    p = env.pop("s1", ALICE, "pw-a")
    n = p.stat()[0]
    assert n == len(good), (n, len(good))
    for i, want in enumerate(good, 1):
        assert strip_trace(b"\r\n".join(p.retr(i)[1]) + b"\r\n") == want, i
    p.dele(1)
    assert p.quit().startswith(b"+OK")
    d.stop()


if __name__ == "__main__":
    mtharness.main(test)
