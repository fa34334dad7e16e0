#!/usr/bin/env python3
"""popbackend.py -- a small POP3 store shard for the MMP's tests (stdlib only).

It implements the store side of the MMP <-> popstore contract, so the MMP's
tests can produce faults the real mailtier-popstore never shows on purpose:

  * the MMP logs in with SASL AUTH PLAIN: authorization identity = the
    user's canonical address, authentication identity = the proxy user,
    password = the proxy password; only from --proxy-addresses;
  * answers +OK, or -ERR [IN-USE] (the mailbox is open in another session),
    -ERR [AUTH] (bad proxy credential), -ERR [SYS/TEMP] (--mode systemp);
  * then RFC 1939 TRANSACTION commands on an in-memory mailbox: STAT,
    LIST, UIDL, RETR, TOP, DELE, NOOP, RSET, CAPA, QUIT (UPDATE: deletions
    happen only on QUIT).

Modes (--mode) for fault tests:
  normal    as above
  silent    accept connections, never send a greeting
  systemp   greet, then answer AUTH with -ERR [SYS/TEMP]

Usage:
  popbackend.py --listen 127.0.0.1:PORT --name s1 --proxy-user mmp \
      --proxy-password-file FILE --mailboxes FILE.json [--mode MODE]

The mailboxes file maps an address to a list of messages (text, lines
separated by \\n). The server prints one line per event on stdout
("login user=... peer=...", "refused ...", "quit user=... deleted=N") so a
test can check what the MMP did. Test code only; RFCs 1939, 2449 (CAPA,
response codes), 5034 (AUTH), 4616 (PLAIN), 3206 ([IN-USE], [SYS/TEMP]).
"""

import argparse
import base64
import json
import signal
import socketserver
import sys
import threading

LOCK = threading.Lock()
IN_USE = set()


def log(text):
    with LOCK:
        print(text, flush=True)


class Handler(socketserver.StreamRequestHandler):
    timeout = 600

    def send(self, line):
        self.wfile.write(line.encode() + b"\r\n")
        self.wfile.flush()

    def readline(self):
        line = self.rfile.readline(1100)
        if not line:
            return None
        return line.rstrip(b"\r\n").decode("utf-8", "replace")

    def handle(self):
        cfg = self.server.cfg
        peer = self.client_address[0]
        if cfg.mode == "silent":
            self.rfile.read()           # until the MMP gives up
            return
        self.send(f"+OK {cfg.name} POP3 stand-in ready")
        user = None
        try:
            user = self.authorization(peer)
            if user is not None:
                self.transaction(user)
        finally:
            if user is not None:
                with LOCK:
                    IN_USE.discard(user)

    def authorization(self, peer):
        cfg = self.server.cfg
        while True:
            line = self.readline()
            if line is None:
                return None
            word, _, arg = line.partition(" ")
            word = word.upper()
            if word == "QUIT":
                self.send("+OK bye")
                return None
            if word == "CAPA":
                self.send("+OK")
                for c in ("TOP", "UIDL", "RESP-CODES", "AUTH-RESP-CODE",
                          "PIPELINING", "SASL PLAIN", "."):
                    self.send(c)
                continue
            if word != "AUTH":
                self.send("-ERR [AUTH] proxy logins only")
                continue
            mech, _, ir = arg.partition(" ")
            if mech.upper() != "PLAIN":
                self.send("-ERR unsupported mechanism")
                continue
            if not ir:
                self.send("+ ")
                ir = self.readline()
                if ir is None:
                    return None
            try:
                authzid, authcid, password = \
                    base64.b64decode(ir, validate=True).decode().split("\0")
            except Exception:
                self.send("-ERR bad PLAIN response")
                continue
            if peer not in cfg.proxy_addresses:
                log(f"refused peer={peer} reason=not-a-proxy-address")
                self.send("-ERR [AUTH] not a proxy address")
                continue
            if authcid != cfg.proxy_user or password != cfg.proxy_password:
                log(f"refused peer={peer} authcid={authcid} reason=bad-credential")
                self.send("-ERR [AUTH] bad proxy credential")
                continue
            if cfg.mode == "systemp":
                self.send("-ERR [SYS/TEMP] store busy")
                continue
            user = authzid.lower()
            with LOCK:
                if user in IN_USE:
                    busy = True
                else:
                    busy = False
                    IN_USE.add(user)
            if busy:
                log(f"in-use user={user}")
                self.send("-ERR [IN-USE] mailbox is locked by another session")
                continue
            log(f"login user={user} peer={peer} shard={cfg.name}")
            self.send(f"+OK {user} logged in at {cfg.name}")
            return user

    def transaction(self, user):
        box = self.server.mailboxes.setdefault(user, [])
        deleted = set()

        def msg(arg):
            try:
                n = int(arg)
            except ValueError:
                return None
            if 1 <= n <= len(box) and n - 1 not in deleted:
                return n - 1
            return None

        def wire(text):
            return text.replace("\r\n", "\n").replace("\n", "\r\n").encode()

        while True:
            line = self.readline()
            if line is None:
                log(f"dropped user={user}")
                return
            word, _, arg = line.partition(" ")
            word = word.upper()
            live = [i for i in range(len(box)) if i not in deleted]
            if word == "STAT":
                size = sum(len(wire(box[i])) for i in live)
                self.send(f"+OK {len(live)} {size}")
            elif word in ("LIST", "UIDL"):
                def item(i):
                    return (str(len(wire(box[i]))) if word == "LIST"
                            else f"{self.server.cfg.name}-{user}-{i + 1}")
                if arg:
                    i = msg(arg)
                    self.send(f"+OK {i + 1} {item(i)}" if i is not None
                              else "-ERR no such message")
                else:
                    self.send("+OK")
                    for i in live:
                        self.send(f"{i + 1} {item(i)}")
                    self.send(".")
            elif word in ("RETR", "TOP"):
                num, _, lines = arg.partition(" ")
                i = msg(num)
                if i is None:
                    self.send("-ERR no such message")
                    continue
                body = wire(box[i])
                if word == "TOP":
                    head, sep, rest = body.partition(b"\r\n\r\n")
                    body = head + sep + b"".join(
                        l + b"\r\n" for l in
                        rest.split(b"\r\n")[:int(lines or 0)] if sep)
                if not body.endswith(b"\r\n"):
                    body += b"\r\n"
                stuffed = b"".join((b"." + l if l.startswith(b".") else l)
                                   for l in body.splitlines(True))
                self.wfile.write(b"+OK message follows\r\n" + stuffed + b".\r\n")
                self.wfile.flush()
            elif word == "DELE":
                i = msg(arg)
                if i is None:
                    self.send("-ERR no such message")
                else:
                    deleted.add(i)
                    self.send("+OK deleted")
            elif word == "RSET":
                deleted.clear()
                self.send("+OK")
            elif word == "NOOP":
                self.send("+OK")
            elif word == "CAPA":
                self.send("+OK")
                for c in ("TOP", "UIDL", "RESP-CODES", "PIPELINING", "."):
                    self.send(c)
            elif word == "QUIT":
                with LOCK:
                    for i in sorted(deleted, reverse=True):
                        del box[i]
                log(f"quit user={user} deleted={len(deleted)}")
                self.send("+OK bye")
                return
            else:
                self.send("-ERR unknown command")


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 128


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--listen", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--proxy-user", default="mmp")
    p.add_argument("--proxy-password-file", required=True)
    p.add_argument("--proxy-addresses", default="127.0.0.1")
    p.add_argument("--mailboxes")
    p.add_argument("--mode", default="normal",
                   choices=("normal", "silent", "systemp"))
    cfg = p.parse_args()
    with open(cfg.proxy_password_file) as f:
        cfg.proxy_password = f.readline().rstrip("\r\n")
    cfg.proxy_addresses = set(cfg.proxy_addresses.replace(",", " ").split())
    host, _, port = cfg.listen.rpartition(":")
    server = Server((host, int(port)), Handler)
    server.cfg = cfg
    server.mailboxes = {}
    if cfg.mailboxes:
        with open(cfg.mailboxes) as f:
            server.mailboxes = {k.lower(): v for k, v in json.load(f).items()}
    # The harness stops daemons with SIGTERM and expects status 0.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    log(f"listening {cfg.listen} name={cfg.name} mode={cfg.mode}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
