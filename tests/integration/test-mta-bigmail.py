#!/usr/bin/env python3
"""test-mta-bigmail.py -- message bodies are streamed, never held whole
(the audit's "bodies in memory" finding): twenty clients send a 45 MiB
message each at the same time to mailtier-mta over SMTP (ten with DATA,
ten with BDAT in 7 MiB chunks), the MTA queues them in pieces while they
arrive and delivers them over LMTP to two real mailtier-popstore shards,
and every message reads back over POP3 byte-exact (SHA-256 of the content
after the trace lines the tiers add). The MTA's own memory (RssAnon,
sampled every 50 ms) grows by at most MTA_ANON_BOUND_MIB and its peak
resident set (VmHWM) by at most MTA_RSS_BOUND_MIB, where holding the
bodies would take 900 MiB; each store's own memory grows by at most
STORE_ANON_BOUND_MIB while it takes ten of them. The figures are printed
(not checked in an ASan build, whose quarantine and shadow memory are not
ours).

Bounded: 20 messages, every socket with a timeout, every wait with a
deadline."""

import hashlib
import os
import re
import socket
import threading
import time

import mta_setup
import mtharness
from popstorelib import instrumented, proc_status_kb as vm_kib

ALICE, BOB = "alice@example.test", "bob@example.test"
MESSAGES = 20
MIB = 1024 * 1024
SIZE_MIB = 45
BDAT_CHUNK = 7 * MIB
# What the MTA's own memory (RssAnon) may grow by: twenty sessions at
# about 1 MiB each (two pieces and the socket's input buffer), twenty
# deliveries at about 1 MiB each (the head, a piece, the socket's output
# buffer), allocator slack (measured: 40-50 MiB); and the queue's Berkeley
# DB regions (64 MiB cache, 8 MiB log buffer, private memory: DB_PRIVATE),
# which fill as pieces are written: bounded by configuration, not by mail.
# Holding the bodies would be 900 MiB (measured on an earlier release:
# 632 MiB).
MTA_REGIONS_MIB = 96
MTA_ANON_BOUND_MIB = 80 + MTA_REGIONS_MIB
# The whole resident set (VmHWM) may grow by no more.
MTA_RSS_BOUND_MIB = MTA_ANON_BOUND_MIB
# A store receives ten of the messages (the MTA's LMTP client sends them
# concurrently): its own memory may grow by this much.
STORE_ANON_BOUND_MIB = 32


def header(i):
    return (f"From: <big{i}@remote.test>\r\nTo: <{rcpt(i)}>\r\n"
            f"Subject: big message {i}\r\nMessage-ID: <big{i}@remote.test>\r\n"
            f"Date: Tue, 01 Dec 2026 12:00:00 +0000\r\n\r\n").encode()


def rcpt(i):
    return ALICE if i % 2 == 0 else BOB


def blocks(i):
    """The content of message i, 1 MiB at a time: lines of 78 octets that
    differ per message and per MiB (none starts with a dot)."""
    line = (f"message {i:02d} " + "abcdefghijklmnopqrstuvwxyz" * 3)[:76] + "\r\n"
    base = (line * (MIB // len(line) + 1)).encode()
    yield header(i)
    for k in range(SIZE_MIB):
        tag = f"block {k:04d} of {i:02d}\r\n".encode()
        yield tag + base[:MIB - len(tag) - 2] + b"\r\n"


def expected_digest(i):
    h = hashlib.sha256()
    for b in blocks(i):
        h.update(b)
    return h.hexdigest()


class Client:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        self.buf = b""

    def reply(self):
        lines = []
        while True:
            while b"\r\n" not in self.buf:
                data = self.sock.recv(65536)
                assert data, "connection closed"
                self.buf += data
            line, self.buf = self.buf.split(b"\r\n", 1)
            lines.append(line.decode())
            if len(line) < 4 or line[3:4] != b"-":
                return lines

    def cmd(self, text, want):
        self.sock.sendall(text.encode() + b"\r\n")
        lines = self.reply()
        assert lines[-1].startswith(want), (text, lines)
        return lines[-1]


def send(port, i, results):
    c = Client(port)
    c.reply()
    c.cmd("EHLO client.test", "250")
    c.cmd(f"MAIL FROM:<big{i}@remote.test> SIZE={(SIZE_MIB + 1) * MIB}", "250")
    c.cmd(f"RCPT TO:<{rcpt(i)}>", "250")
    if i < MESSAGES // 2:
        c.cmd("DATA", "354")
        for b in blocks(i):
            c.sock.sendall(b)
        last = c.cmd(".", "250")
    else:
        data = b"".join(blocks(i))	# 45 MiB in the client only
        for off in range(0, len(data), BDAT_CHUNK):
            piece = data[off:off + BDAT_CHUNK]
            is_last = off + BDAT_CHUNK >= len(data)
            c.sock.sendall(f"BDAT {len(piece)}{' LAST' if is_last else ''}\r\n"
                           .encode() + piece)
            last = c.reply()[-1]
            assert last.startswith("250"), last
        del data
    c.cmd("QUIT", "221")
    c.sock.close()
    results[i] = re.search(r"queued as ([0-9A-F]{16})", last).group(1)


def retr_digests(port, user):
    """SHA-256 of each message's content after the trace lines, read over
    POP3 without holding a message (none of ours has a dot-stuffed line)."""
    c = Client(port)
    c.reply()
    c.cmd(f"USER {user}", "+OK")
    c.cmd(f"PASS {mta_setup.PASSWORD}", "+OK")
    count = int(c.cmd("STAT", "+OK").split()[1])
    digests = []
    for n in range(1, count + 1):
        c.cmd(f"RETR {n}", "+OK")
        h = hashlib.sha256()
        start = None
        tail = b""
        while True:
            data = c.buf or c.sock.recv(1 << 20)
            c.buf = b""
            assert data, "connection closed in RETR"
            chunk = tail + data
            if start is None:
                start = chunk.find(b"\r\nFrom: <")
                if start < 0:
                    tail, start = chunk[-64:], None
                    continue
                chunk = chunk[start + 2:]
            end = chunk.find(b"\r\n.\r\n")
            if end >= 0:
                h.update(chunk[:end + 2])
                c.buf = chunk[end + 5:]
                break
            h.update(chunk[:-4])
            tail = chunk[-4:]
        digests.append(h.hexdigest())
    c.cmd("QUIT", "+OK")
    return digests


def test(h):
    env = mta_setup.MtaEnv(h, users={ALICE: "s1", BOB: "s2"}, popstore=True,
                           mta_options={"max_message_size": "60M",
                                        "data_timeout": "120s",
                                        "command_timeout": "120s",
                                        "client_timeout": "120s"},
                           popstore_options={"max_message_size": "60M"})
    stores = env.start_popstores()
    mta = env.start_mta()
    with env.smtp() as s:	# warm: one small message through both tiers
        s.sendmail("warm@remote.test", [ALICE], mta_setup.message("warm"))
    mta.wait_log(r"to=<alice@example.test> relay=s1.*status=sent")
    rss_before = vm_kib(mta.pid, "VmRSS")

    sampled = {"RssAnon": 0, "RssFile": 0, "RssShmem": 0}
    store_anon = {name: [vm_kib(d.pid, "RssAnon"), 0] for name, d in stores.items()}
    stop = threading.Event()

    def sample():
        while not stop.wait(0.05):
            for field in sampled:
                sampled[field] = max(sampled[field], vm_kib(mta.pid, field))
            for name, d in stores.items():
                store_anon[name][1] = max(store_anon[name][1],
                                          vm_kib(d.pid, "RssAnon"))
    sampler = threading.Thread(target=sample)
    sampler.start()
    anon_before = vm_kib(mta.pid, "RssAnon")
    results = {}
    started = time.monotonic()
    threads = [threading.Thread(target=send, args=(env.smtp_port, i, results))
               for i in range(MESSAGES)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    received_s = time.monotonic() - started
    assert len(results) == MESSAGES, f"only {len(results)} messages queued"
    def all_sent():
        log = mta.log()
        return all(re.search(rf"queue={qid} to=<.*status=sent", log)
                   for qid in results.values())
    mta_setup.wait_until("every message delivered", all_sent, timeout=600)
    delivered_s = time.monotonic() - started
    peak = vm_kib(mta.pid, "VmHWM")
    stop.set()
    sampler.join()
    print(f"# mta: RssAnon before {anon_before // 1024} MiB, sampled peaks (MiB): " +
          " ".join(f"{k}={v // 1024}" for k, v in sampled.items()))
    print(f"# mta: VmRSS before {rss_before // 1024} MiB, peak (VmHWM) "
           f"{peak // 1024} MiB for {MESSAGES} x {SIZE_MIB} MiB at once; "
           f"received in {received_s:.1f} s, delivered in {delivered_s:.1f} s")
    for name, (before, peak_anon) in store_anon.items():
        print(f"# popstore {name}: RssAnon before {before // 1024} MiB, "
              f"sampled peak {peak_anon // 1024} MiB")
    if instrumented(mta.pid):
        print("# ASan build: memory figures not checked")
    else:
        assert sampled["RssAnon"] - anon_before <= MTA_ANON_BOUND_MIB * 1024, \
            f"mta RssAnon grew by {(sampled['RssAnon'] - anon_before) // 1024} MiB"
        assert peak - rss_before <= MTA_RSS_BOUND_MIB * 1024, \
            f"mta resident set grew by {(peak - rss_before) // 1024} MiB"
        for name, (before, peak_anon) in store_anon.items():
            assert peak_anon - before <= STORE_ANON_BOUND_MIB * 1024, \
                f"popstore {name} RssAnon grew by {(peak_anon - before) // 1024} MiB"

    want = {rcpt(i): [] for i in range(MESSAGES)}
    for i in range(MESSAGES):
        want[rcpt(i)].append(expected_digest(i))
    for user, shard in ((ALICE, "s1"), (BOB, "s2")):
        got = retr_digests(env.store_ports[shard]["pop3"], user)
        # The warm-up message is alice's first; the rest are ours.
        ours = got[1:] if user == ALICE else got
        assert sorted(ours) == sorted(want[user]), (user, len(ours))
    print("# every message read back byte-exact over POP3")


if __name__ == "__main__":
    mtharness.main(test)
