#!/usr/bin/env python3
"""test-loadgen-fill.py -- `mailtier-load fill` by SMTP and by LMTP straight
to the store shards, against small real SMTP and LMTP servers started here
(asyncio, RFC 5321 / RFC 2033: LHLO, one reply per recipient after DATA,
several transactions a connection).

Checks: the same seed fills the same mailboxes either way (per user the
same messages: sender and size); by LMTP every user's messages land on the
shard that dirsvc's rendezvous hash picks (recomputed here from its
definition in dirsvc/README.md, with the values pinned in
tests/unit/test-provision.c); the shards come from --lmtp NAME=HOST:PORT or
from a config file's [shards] (--lmtp-shards); one plain --lmtp HOST:PORT
takes everything; a shard that rejects recipients makes the fill fail
(exit 1) with the failures counted; bad flags exit 2.

Trust boundary: test code; the servers listen on 127.0.0.1 only."""

import asyncio
import os
import re
import subprocess
import sys
import tempfile
import threading

LOAD = os.path.join(os.environ.get("MT_BUILDDIR", "."), "loadgen", "mailtier-load")
DOMAIN = "example.test"
USERS = 60


# ---- the rendezvous hash, from dirsvc/README.md ----

def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return h


def fmix64(k):
    k ^= k >> 33
    k = (k * 0xff51afd7ed558ccd) & 0xffffffffffffffff
    k ^= k >> 33
    k = (k * 0xc4ceb9fe1a85ec53) & 0xffffffffffffffff
    k ^= k >> 33
    return k


def score(addr, shard):
    return fmix64(fnv1a64(shard.encode() + b"\0" + addr.lower().encode()))


def shard_of(addr, names):
    return max(sorted(names), key=lambda n: (score(addr, n), [-ord(c) for c in n]))


# ---- small servers ----

class Server:
    """An SMTP or LMTP server keeping (rcpt, sender, size) of each message."""

    def __init__(self, lmtp, reject=()):
        self.lmtp = lmtp
        self.reject = set(reject)
        self.messages = []
        self.connections = 0
        self.max_per_connection = 0

    async def handle(self, reader, writer):
        self.connections += 1
        done_here = 0
        mail_from, rcpts = None, []

        def reply(text):
            writer.write((text + "\r\n").encode())

        reply("220 test %s ready" % ("LMTP" if self.lmtp else "ESMTP"))
        try:
            while True:
                line = await asyncio.wait_for(reader.readline(), 30)
                if not line:
                    break
                cmd = line.decode("latin-1").rstrip("\r\n")
                verb = cmd[:4].upper()
                if verb == ("LHLO" if self.lmtp else "EHLO"):
                    reply("250-test\r\n250 PIPELINING")
                elif verb == "HELO" and not self.lmtp:
                    reply("250 test")
                elif verb == "MAIL":
                    mail_from, rcpts = re.search(r"<(.*)>", cmd).group(1), []
                    reply("250 2.1.0 ok")
                elif verb == "RCPT":
                    rcpt = re.search(r"<(.*)>", cmd).group(1)
                    if rcpt in self.reject:
                        reply("550 5.1.1 no such user")
                    else:
                        rcpts.append(rcpt)
                        reply("250 2.1.5 ok")
                elif verb == "DATA":
                    reply("354 go on")
                    size = 0
                    while True:
                        data = await asyncio.wait_for(reader.readline(), 30)
                        if data in (b".\r\n", b""):
                            break
                        size += len(data) - (1 if data.startswith(b"..") else 0)
                    for r in rcpts:
                        self.messages.append((r, mail_from, size))
                        if self.lmtp:
                            reply("250 2.0.0 <%s> delivered" % r)
                    if not self.lmtp:
                        reply("250 2.0.0 queued")
                    done_here += 1
                    self.max_per_connection = max(self.max_per_connection, done_here)
                elif verb == "QUIT":
                    reply("221 bye")
                    break
                else:
                    reply("500 5.5.1 what")
                await writer.drain()
        finally:
            writer.close()

    def by_user(self):
        boxes = {}
        for rcpt, sender, size in self.messages:
            boxes.setdefault(rcpt, []).append((sender, size))
        return {k: sorted(v) for k, v in boxes.items()}


class Servers:
    """Servers on kernel-chosen 127.0.0.1 ports, run by a thread's loop."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def start(self, server):
        async def listen():
            return await asyncio.start_server(server.handle, "127.0.0.1", 0)
        srv = asyncio.run_coroutine_threadsafe(listen(), self.loop).result(10)
        return "127.0.0.1:%d" % srv.sockets[0].getsockname()[1]

    def stop(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def fill(*args, expect=0):
    argv = [LOAD, "fill", "--users", str(USERS), "--domain", DOMAIN, "--seed", "11",
            "--progress", "0", "--step-timeout", "10"] + list(args)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert p.returncode == expect, "%s: exit %d, want %d\n%s%s" % (
        " ".join(argv), p.returncode, expect, p.stdout, p.stderr)
    return p.stdout


def counts(out):
    m = re.search(r"messages planned (\d+), accepted (\d+), failed (\d+)", out)
    assert m, out
    return tuple(int(x) for x in m.groups())


def main():
    # The hash is dirsvc's: the values pinned in test-provision.c.
    assert score("user1@example.test", "store1") == 0xa28b0825b42fe453
    assert score("user1500000@example.test", "store1") == 0x0ea569e1d3f7119b
    assert shard_of("postmaster@example.test", ["store1", "store2", "store3"]) == "store3"
    assert shard_of("user3@example.test", ["store1", "store2"]) == "store1"

    servers = Servers()
    work = tempfile.mkdtemp(prefix="test-loadgen-fill.")
    try:
        # By SMTP: one message a session.
        smtp = Server(lmtp=False)
        out = fill("--smtp", servers.start(smtp), "--concurrency", "4")
        planned, accepted, failed = counts(out)
        assert planned == accepted == len(smtp.messages) and failed == 0, out
        assert planned > USERS, "a %d-user fill of %d messages is unlikely" % (USERS, planned)
        assert smtp.connections == planned, (smtp.connections, planned)
        print("smtp:", out.strip())

        # By LMTP to three shards named as in [shards].
        names = ["store1", "store2", "store3"]
        shards = {n: Server(lmtp=True) for n in names}
        spec = ",".join("%s=%s" % (n, servers.start(s)) for n, s in shards.items())
        out = fill("--lmtp", spec, "--concurrency", "2")
        print("lmtp:", out.strip())
        assert counts(out) == (planned, planned, 0), out
        union = {}
        for name, s in shards.items():
            assert s.connections <= 2 + 1, "%s: %d connections" % (name, s.connections)
            for rcpt, msgs in s.by_user().items():
                want = shard_of(rcpt, names)
                assert want == name, "%s landed on %s, hash says %s" % (rcpt, name, want)
                union[rcpt] = msgs
            m = re.search(r"shard %s \(\S+\): users (\d+), messages (\d+)" % name, out)
            assert m and int(m.group(2)) == len(s.messages), (name, out)
        assert any(s.max_per_connection > 1 for s in shards.values()), \
            "LMTP sent one message a connection"
        # The same seed, the same mailboxes: per user the same senders and sizes.
        assert union == smtp.by_user(), "SMTP and LMTP fills differ"

        # The shards from a config file's [shards] (a generator host's file).
        conf = os.path.join(work, "loadgen.conf")
        again = {n: Server(lmtp=True) for n in names}
        with open(conf, "w") as f:
            f.write("[loadgen]\nusers = %d\ndomain = %s\nconcurrency = 3\n[shards]\n" % (USERS, DOMAIN))
            for n, s in again.items():
                f.write("%s = %s, 127.0.0.1:1\n" % (n, servers.start(s)))
        out = subprocess.run([LOAD, "fill", "--config", conf, "--lmtp-shards", "--seed", "11",
                              "--progress", "0"], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        for n in names:
            assert again[n].by_user() == shards[n].by_user(), "config shards differ: " + n

        # One LMTP server for everyone.
        one = Server(lmtp=True)
        out = fill("--lmtp", servers.start(one))
        assert counts(out) == (planned, planned, 0) and one.by_user() == smtp.by_user(), out

        # A shard that rejects a user: those messages fail, exit 1.
        victim = next(r for r, m in smtp.by_user().items() if len(m) >= 2)
        picky = Server(lmtp=True, reject=[victim])
        out = fill("--lmtp", servers.start(picky), expect=1)
        p, a, f = counts(out)
        assert p == planned and f == len(smtp.by_user()[victim]) and a == p - f, out
        assert re.search(r"fill: rejected errors \d+", out), out

        # Usage errors.
        fill("--smtp", "127.0.0.1:1", "--lmtp", "127.0.0.1:2", expect=2)
        fill("--lmtp", "127.0.0.1:1,127.0.0.1:2", expect=2)
        fill("--lmtp-shards", expect=2)
        fill(expect=2)
    finally:
        servers.stop()
        for name in os.listdir(work):
            os.unlink(os.path.join(work, name))
        os.rmdir(work)
    print("PASS: loadgen fill by SMTP and LMTP")
    return 0


if __name__ == "__main__":
    sys.exit(main())
