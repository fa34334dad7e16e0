"""lmtpd -- a small LMTP (RFC 2033) or SMTP (RFC 5321) server for the MTA's
integration tests, stdlib only, run in a thread of the test.

It stands in for mailtier-popstore's LMTP listener (a shard) and for a
remote MX or relay host (a sink) until those daemons are part of a test. It
speaks the parts of the protocols the MTA's clients use: LHLO/EHLO with
PIPELINING, SIZE, 8BITMIME, SMTPUTF8, ENHANCEDSTATUSCODES and optionally
STARTTLS; MAIL, RCPT, DATA (dot-unstuffed, ends only at CRLF.CRLF), RSET,
NOOP, QUIT. LMTP answers DATA once per accepted recipient.

    sink = MailSink(lmtp=True).start()
    ... sink.port ...
    sink.wait_messages(2)
    sink.messages  -> [Delivery(mail_from, rcpt, data, conn_id), ...]
    sink.rcpt_reply = lambda rcpt: (550, "5.1.1 no such user") or None
    sink.data_reply = lambda rcpt: (452, "4.2.2 over quota") or None
    sink.stop()

Trust boundary: test code; its peer is the MTA under test, whose output is
checked (bare LF, unstuffed dots and overlong lines are recorded as
protocol errors in sink.errors)."""

import socket
import socketserver
import ssl
import threading
import time


class Delivery:
    def __init__(self, mail_from, rcpt, data, conn_id, params):
        self.mail_from = mail_from
        self.rcpt = rcpt
        self.data = data
        self.conn_id = conn_id
        self.params = params

    def __repr__(self):
        return (f"Delivery(from={self.mail_from!r}, rcpt={self.rcpt!r}, "
                f"{len(self.data)} octets, conn={self.conn_id})")


def _path(arg):
    """<addr> out of 'FROM:<addr> PARAMS' / 'TO:<addr> PARAMS'."""
    start, end = arg.find("<"), arg.find(">")
    if start < 0 or end < start:
        return None, ""
    return arg[start + 1:end], arg[end + 1:].strip()


class _Handler(socketserver.StreamRequestHandler):
    timeout = 30

    def setup(self):
        super().setup()
        self.sink = self.server.sink
        with self.sink.lock:
            self.sink.connections += 1
            self.conn_id = self.sink.connections
            self.sink.open_connections += 1
            self.raw_sock = self.connection
            self.sink._sockets.add(self.raw_sock)
        self.tls = False

    def finish(self):
        with self.sink.lock:
            self.sink.open_connections -= 1
            self.sink._sockets.discard(self.raw_sock)
        try:
            super().finish()
        except OSError:
            pass

    def send(self, text):
        self.wfile.write(text.encode("utf-8") + b"\r\n")
        self.wfile.flush()

    def readline(self):
        line = self.rfile.readline(65536)
        if not line:
            return None
        if not line.endswith(b"\r\n"):
            self.sink.errors.append(f"command line without CRLF: {line!r}")
        return line.rstrip(b"\r\n").decode("utf-8", "replace")

    def read_data(self):
        """Message data up to CRLF.CRLF, unstuffed; None on EOF."""
        lines = []
        while True:
            line = self.rfile.readline(1 << 20)
            if not line:
                return None
            if not line.endswith(b"\r\n") or b"\r" in line[:-2]:
                self.sink.errors.append(f"bare CR/LF in DATA: {line[:80]!r}")
            if len(line) > 1000:
                self.sink.errors.append(f"DATA line of {len(line)} octets")
            if line == b".\r\n":
                return b"".join(lines)
            if line.startswith(b"."):
                line = line[1:]
            lines.append(line)

    def handle(self):
        try:
            self._handle()
        except (OSError, ssl.SSLError):
            pass    # the MTA went away (killed, timed out): nothing to do

    def _handle(self):
        sink = self.sink
        if sink.greeting_delay:
            time.sleep(sink.greeting_delay)
        self.send(f"220 {sink.name} {'LMTP' if sink.lmtp else 'ESMTP'} ready")
        mail_from, rcpts, params = None, [], ""
        while True:
            line = self.readline()
            if line is None:
                return
            with sink.lock:
                sink.commands.append((self.conn_id, line))
            verb = line.split(" ", 1)[0].upper()
            arg = line[len(verb) + 1:] if " " in line else ""
            if verb in ("LHLO", "EHLO", "HELO"):
                if (verb == "LHLO") != sink.lmtp and verb != "HELO":
                    self.send("500 5.5.1 wrong greeting for this protocol")
                    continue
                ext = ["PIPELINING", "SIZE 100000000", "8BITMIME",
                       "ENHANCEDSTATUSCODES", "SMTPUTF8"] + sink.extensions
                if sink.lmtp:
                    ext.append("XQUEUEID")      # as mailtier-popstore does
                if sink.tls_context is not None and not self.tls:
                    ext.append("STARTTLS")
                lines = [sink.name] + ext
                for item in lines[:-1]:
                    self.send("250-" + item)
                self.send("250 " + lines[-1])
                mail_from, rcpts = None, []
            elif verb == "STARTTLS" and sink.tls_context is not None and not self.tls:
                self.send("220 2.0.0 go ahead")
                conn = sink.tls_context.wrap_socket(self.connection,
                                                    server_side=True)
                self.connection = conn
                self.rfile = conn.makefile("rb")
                self.wfile = conn.makefile("wb")
                self.tls = True
                with sink.lock:
                    sink.tls_sessions += 1
            elif verb == "MAIL":
                mail_from, params = _path(arg)
                rcpts = []
                self.send("250 2.1.0 ok")
            elif verb == "RCPT":
                rcpt, _ = _path(arg)
                reply = sink.rcpt_reply(rcpt) if sink.rcpt_reply else None
                if reply is None:
                    rcpts.append(rcpt)
                    self.send("250 2.1.5 ok")
                else:
                    self.send(f"{reply[0]} {reply[1]}")
            elif verb == "DATA":
                if not rcpts:
                    self.send("503 5.5.1 no valid recipients")
                    continue
                self.send("354 go ahead")
                data = self.read_data()
                if data is None:
                    return
                if sink.stall_after_data:
                    time.sleep(sink.stall_after_data)
                self._replies_after_data(mail_from, rcpts, data, params)
                mail_from, rcpts = None, []
            elif verb == "RSET":
                mail_from, rcpts = None, []
                self.send("250 2.0.0 ok")
            elif verb == "NOOP":
                self.send("250 2.0.0 ok")
            elif verb == "QUIT":
                self.send("221 2.0.0 bye")
                return
            else:
                self.send("502 5.5.2 unknown command")

    def _replies_after_data(self, mail_from, rcpts, data, params):
        sink = self.sink
        if sink.lmtp:
            for rcpt in rcpts:
                reply = sink.data_reply(rcpt) if sink.data_reply else None
                if reply is None:
                    sink._store(Delivery(mail_from, rcpt, data, self.conn_id, params))
                    self.send(f"250 2.0.0 <{rcpt}> delivered")
                else:
                    self.send(f"{reply[0]} {reply[1]}")
            return
        reply = sink.data_reply(rcpts) if sink.data_reply else None
        if reply is None:
            for rcpt in rcpts:
                sink._store(Delivery(mail_from, rcpt, data, self.conn_id, params))
            self.send("250 2.0.0 queued")
        else:
            self.send(f"{reply[0]} {reply[1]}")


class _Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


class MailSink:
    """An LMTP (lmtp=True) or SMTP server on host:port (0: a free port)."""

    def __init__(self, lmtp=True, host="127.0.0.1", port=0, name=None,
                 cert=None, key=None):
        self.lmtp = lmtp
        self.host = host
        self.port = port
        self.name = name or ("lmtpd" if lmtp else "smtpd")
        self.lock = threading.Condition()
        self.messages = []
        self.commands = []
        self.errors = []
        self.connections = 0
        self.open_connections = 0
        self.tls_sessions = 0
        self.rcpt_reply = None
        self.extensions = []    # more EHLO keywords, e.g. ["DSN"]
        self.data_reply = None
        self.greeting_delay = 0
        self.stall_after_data = 0
        self.tls_context = None
        if cert is not None:
            self.tls_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls_context.load_cert_chain(cert, key)
        self._server = None
        self._thread = None
        self._sockets = set()

    def start(self):
        self._server = _Server((self.host, self.port), _Handler)
        self._server.sink = self
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Stop listening (a refused connection from now on). Sessions in
        progress are cut off by shutting their sockets down."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._server = None
        with self.lock:
            for sock in list(self._sockets):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _store(self, delivery):
        with self.lock:
            self.messages.append(delivery)
            self.lock.notify_all()

    def wait_messages(self, count, timeout=20.0):
        """Wait until at least count deliveries were stored; returns them."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while len(self.messages) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"{self.name}: {len(self.messages)} of {count} "
                        f"messages after {timeout:.0f} s: {self.messages}")
                self.lock.wait(left)
            return list(self.messages)

    def for_rcpt(self, rcpt):
        with self.lock:
            return [m for m in self.messages if m.rcpt.lower() == rcpt.lower()]


if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser(description="LMTP/SMTP sink for tests")
    p.add_argument("--smtp", action="store_true", help="SMTP instead of LMTP")
    p.add_argument("--port", type=int, default=0)
    a = p.parse_args()
    s = MailSink(lmtp=not a.smtp, port=a.port).start()
    print(f"listening on 127.0.0.1:{s.port}", flush=True)
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
