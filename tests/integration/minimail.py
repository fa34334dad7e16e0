#!/usr/bin/env python3
"""minimail.py -- a small but real SMTP + POP3 mail server for tests.

It stands in for a full mail system (mailtier's daemons, or Postfix +
Dovecot) when the load generator's integration test needs one: SMTP
(RFC 5321: EHLO/HELO, MAIL, RCPT, DATA with dot-unstuffing, RSET, NOOP,
QUIT) accepting mail for user<K>@DOMAIN (K = first..first+users-1) into an
in-memory mailbox store and relaying mail for RELAY_DOMAIN over real SMTP
to a relay host (the load generator's sink); POP3 (RFC 1939: USER, PASS,
STAT, LIST, UIDL, RETR, DELE, NOOP, RSET, QUIT with deletions applied at
QUIT) over the same store. Standard library only (asyncio).

Trust boundary: clients are tests on loopback, but input is still bounded
(line length, recipients, message size, idle time).

Usage: minimail.py --users N --domain D --relay-domain R --relay HOST:PORT
                   --ready FILE [--stats FILE] [--first-user K] [--data-delay S]
(--data-delay: hold every reply after DATA's content S seconds, a slow queue.)
Listens on 127.0.0.1 ports chosen by the kernel and writes
{"smtp": port, "pop": port} to the --ready file; on SIGTERM finishes its
relays (bounded) and writes its counters as JSON to --stats.
"""
import argparse
import asyncio
import itertools
import json
import os
import signal
import sys

LINE_MAX = 65536
MAX_RCPTS = 1000
MAX_MESSAGE = 64 * 1024 * 1024
IDLE_S = 120


class Store:
    """Mailboxes and counters shared by every session."""

    def __init__(self, args):
        self.args = args
        self.boxes = {}           # user number -> list of (uid, bytes)
        self.uids = itertools.count(1)
        self.relays = set()
        self.stats = dict(smtp_sessions=0, messages_accepted=0,
                          local_deliveries=0, relayed_messages=0,
                          relayed_rcpts=0, relay_failures=0,
                          rejected_rcpts=0, pop_sessions=0,
                          pop_logins=0, pop_auth_failures=0,
                          retrieved=0, deleted=0)

    def local_user(self, address):
        """User number of a local address, else None."""
        local, _, domain = address.rpartition("@")
        if domain.lower() != self.args.domain.lower() or not local.startswith("user"):
            return None
        try:
            k = int(local[4:])
        except ValueError:
            return None
        first = self.args.first_user
        return k if first <= k < first + self.args.users else None

    def login_user(self, name):
        k = self.local_user(name if "@" in name else name + "@" + self.args.domain)
        return k

    def deliver(self, user, data):
        self.boxes.setdefault(user, []).append((next(self.uids), data))
        self.stats["local_deliveries"] += 1


async def readline(reader):
    line = await asyncio.wait_for(reader.readline(), IDLE_S)
    if not line:
        raise ConnectionError("closed")
    if len(line) > LINE_MAX:
        raise ConnectionError("line too long")
    return line


def unbracket(arg):
    arg = arg.strip()
    if arg.startswith("<"):
        arg = arg[1:].split(">", 1)[0]
    return arg.split(" ", 1)[0]


async def read_data(reader):
    """Message text up to CRLF.CRLF, un-stuffed (RFC 5321 4.5.2)."""
    lines, size = [], 0
    while True:
        line = await readline(reader)
        if line in (b".\r\n", b".\n"):
            return b"".join(lines)
        if line.startswith(b"."):
            line = line[1:]
        size += len(line)
        if size > MAX_MESSAGE:
            raise ConnectionError("message too big")
        lines.append(line)


def stuff(data):
    """Dot-stuff message text and end it (RFC 5321 4.5.2, RFC 1939 3)."""
    out = []
    for line in data.splitlines(keepends=True):
        out.append(b"." + line if line.startswith(b".") else line)
    text = b"".join(out)
    if text and not text.endswith(b"\r\n"):
        text += b"\r\n"
    return text + b".\r\n"


async def relay(store, sender, rcpts, data):
    """Deliver to the relay host over SMTP; a few tries, then give up."""
    host, _, port = store.args.relay.rpartition(":")
    for attempt in range(3):
        try:
            reader, writer = await asyncio.open_connection(host, int(port))
            try:
                async def expect(code):
                    while True:
                        line = await readline(reader)
                        if line[3:4] != b"-":
                            break
                    if not line.startswith(code):
                        raise ConnectionError("relay answered " + line.decode(errors="replace"))
                await expect(b"220")
                for cmd, code in [(b"EHLO minimail.test", b"250"),
                                  (b"MAIL FROM:<" + sender.encode() + b">", b"250")] + \
                                 [(b"RCPT TO:<" + r.encode() + b">", b"250") for r in rcpts] + \
                                 [(b"DATA", b"354")]:
                    writer.write(cmd + b"\r\n")
                    await expect(code)
                writer.write(stuff(b"Received: by minimail.test\r\n" + data))
                await expect(b"250")
                # Relayed once the sink took it: what happens at QUIT (or a
                # stop meanwhile) must neither lose nor repeat the count.
                store.stats["relayed_messages"] += 1
                store.stats["relayed_rcpts"] += len(rcpts)
                writer.write(b"QUIT\r\n")
                try:
                    await expect(b"221")
                except (OSError, ConnectionError, asyncio.TimeoutError):
                    pass
            finally:
                writer.close()
            return
        except (OSError, ConnectionError, asyncio.TimeoutError):
            await asyncio.sleep(0.5 * (attempt + 1))
    store.stats["relay_failures"] += len(rcpts)


async def smtp_session(store, reader, writer):
    store.stats["smtp_sessions"] += 1
    say = lambda text: writer.write(text.encode() + b"\r\n")
    say("220 minimail.test ESMTP")
    helo, sender, rcpts = False, None, []
    try:
        while True:
            await writer.drain()
            line = (await readline(reader)).decode("utf-8", "replace").rstrip("\r\n")
            verb, _, arg = line.partition(" ")
            verb = verb.upper()
            if verb == "EHLO":
                helo, sender, rcpts = True, None, []
                say("250-minimail.test")
                say("250-PIPELINING")
                say("250 8BITMIME")
            elif verb == "HELO":
                helo, sender, rcpts = True, None, []
                say("250 minimail.test")
            elif verb == "MAIL" and helo and arg.upper().startswith("FROM:"):
                sender, rcpts = unbracket(arg[5:]), []
                say("250 2.1.0 Ok")
            elif verb == "RCPT" and sender is not None and arg.upper().startswith("TO:"):
                rcpt = unbracket(arg[3:])
                domain = rcpt.rpartition("@")[2].lower()
                if len(rcpts) >= MAX_RCPTS:
                    say("452 4.5.3 Too many recipients")
                elif store.local_user(rcpt) is not None or \
                        domain == store.args.relay_domain.lower():
                    rcpts.append(rcpt)
                    say("250 2.1.5 Ok")
                else:
                    store.stats["rejected_rcpts"] += 1
                    say("550 5.1.1 No such user")
            elif verb == "DATA" and rcpts:
                say("354 End data with <CR><LF>.<CR><LF>")
                await writer.drain()
                data = await read_data(reader)
                if store.args.data_delay > 0:
                    await asyncio.sleep(store.args.data_delay)
                store.stats["messages_accepted"] += 1
                remote = []
                for rcpt in rcpts:
                    user = store.local_user(rcpt)
                    if user is not None:
                        store.deliver(user, data)
                    else:
                        remote.append(rcpt)
                if remote:
                    task = asyncio.ensure_future(relay(store, sender, remote, data))
                    store.relays.add(task)
                    task.add_done_callback(store.relays.discard)
                say("250 2.0.0 Ok: queued")
                sender, rcpts = None, []
            elif verb == "RSET":
                sender, rcpts = None, []
                say("250 2.0.0 Ok")
            elif verb == "NOOP":
                say("250 2.0.0 Ok")
            elif verb == "QUIT":
                say("221 2.0.0 Bye")
                await writer.drain()
                return
            elif verb in ("MAIL", "RCPT", "DATA"):
                say("503 5.5.1 Bad sequence of commands")
            else:
                say("502 5.5.2 Command not recognized")
    except (ConnectionError, asyncio.TimeoutError, OSError):
        pass
    finally:
        writer.close()


async def pop_session(store, reader, writer):
    store.stats["pop_sessions"] += 1
    say = lambda text: writer.write(text.encode() + b"\r\n")
    say("+OK minimail POP3 ready")
    name, user, msgs, deleted = None, None, [], set()
    try:
        while True:
            await writer.drain()
            line = (await readline(reader)).decode("utf-8", "replace").rstrip("\r\n")
            verb, _, arg = line.partition(" ")
            verb = verb.upper()
            if verb == "QUIT":
                if user is not None and deleted:
                    gone = {msgs[i][0] for i in deleted}
                    store.boxes[user] = [m for m in store.boxes.get(user, [])
                                         if m[0] not in gone]
                    store.stats["deleted"] += len(gone)
                say("+OK bye")
                await writer.drain()
                return
            if user is None:
                if verb == "USER" and arg:
                    name = arg
                    say("+OK")
                elif verb == "PASS" and name is not None:
                    k = store.login_user(name)
                    if k is not None and arg == "secret%d" % k:
                        user = k
                        msgs = list(store.boxes.get(user, []))
                        store.stats["pop_logins"] += 1
                        say("+OK logged in")
                    else:
                        store.stats["pop_auth_failures"] += 1
                        name = None
                        say("-ERR [AUTH] authentication failed")
                else:
                    say("-ERR log in first")
                continue
            live = [i for i in range(len(msgs)) if i not in deleted]
            def pick():
                try:
                    i = int(arg.split()[0]) - 1
                except (ValueError, IndexError):
                    return None
                return i if 0 <= i < len(msgs) and i not in deleted else None
            if verb == "STAT":
                say("+OK %d %d" % (len(live), sum(len(msgs[i][1]) for i in live)))
            elif verb == "LIST" and not arg:
                say("+OK %d messages" % len(live))
                for i in live:
                    say("%d %d" % (i + 1, len(msgs[i][1])))
                say(".")
            elif verb == "UIDL" and not arg:
                say("+OK")
                for i in live:
                    say("%d %d" % (i + 1, msgs[i][0]))
                say(".")
            elif verb == "RETR" and pick() is not None:
                i = pick()
                say("+OK %d octets" % len(msgs[i][1]))
                writer.write(stuff(msgs[i][1]))
                store.stats["retrieved"] += 1
            elif verb == "DELE" and pick() is not None:
                deleted.add(pick())
                say("+OK deleted")
            elif verb == "RSET":
                deleted.clear()
                say("+OK")
            elif verb == "NOOP":
                say("+OK")
            else:
                say("-ERR unknown command or no such message")
    except (ConnectionError, asyncio.TimeoutError, OSError):
        pass
    finally:
        writer.close()


async def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--users", type=int, required=True)
    p.add_argument("--first-user", type=int, default=1)
    p.add_argument("--domain", required=True)
    p.add_argument("--relay-domain", required=True)
    p.add_argument("--relay", required=True, help="HOST:PORT")
    p.add_argument("--ready", required=True)
    p.add_argument("--stats")
    p.add_argument("--data-delay", type=float, default=0.0)
    args = p.parse_args()
    store = Store(args)

    smtp = await asyncio.start_server(lambda r, w: smtp_session(store, r, w),
                                      "127.0.0.1", 0, limit=LINE_MAX + 2)
    pop = await asyncio.start_server(lambda r, w: pop_session(store, r, w),
                                     "127.0.0.1", 0, limit=LINE_MAX + 2)
    ports = {"smtp": smtp.sockets[0].getsockname()[1],
             "pop": pop.sockets[0].getsockname()[1], "pid": os.getpid()}
    with open(args.ready + ".tmp", "w") as f:
        json.dump(ports, f)
    os.rename(args.ready + ".tmp", args.ready)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    smtp.close()
    pop.close()
    if store.relays:
        await asyncio.wait(list(store.relays), timeout=5)
    store.stats["messages_in_mailboxes"] = sum(len(b) for b in store.boxes.values())
    if args.stats:
        with open(args.stats, "w") as f:
            json.dump(store.stats, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(1)
