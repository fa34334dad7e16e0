"""attacks.py -- slow and malicious clients for the fault-injection suite
(faults.py): each attack runs against the MTA's SMTP port, the MMP's POP3
port and a store's POP3 port (and the TLS ports where TLS is the point)
while the suite's load runs, and reports what the daemons answered.

  SlowClients   N connections sending one byte a second (and reading what
                comes back), from many loopback source addresses
  NoRead        RETR of a large message through the MMP and directly from
                the store, never read; SMTP sessions that pipeline commands
                until the MTA stops reading, never reading a reply
  flood_one     pipelined command floods, the replies read as they come
  long_line_one a 10 MB command line, then a normal command
  nul_8bit_one  NUL and 8-bit bytes in commands, then normal commands
  TlsStall      implicit-TLS ports and STARTTLS/STLS: nothing or half a
                ClientHello, then silence

Every attack connection comes from 127.1.x.y (40 connections an address at
most, below the MTA's max_sessions_per_client 50 and the MMP's
conn_limit_per_client 100), so the per-address limits and the MMP's
per-address login penalties never fall on the load, which runs from
127.0.0.1. No attack sends a password that fails.

A reply that closes a connection must be a documented one (`closing_ok`).
Trust boundary: test code; the daemons are not trusted, so every wait has a
bound and every socket is closed by stop() or its function.
"""

import concurrent.futures
import errno
import re
import resource
import selectors
import socket
import ssl
import threading
import time

PER_ADDR = 40


def raise_nofile(want):
    """Raise the soft descriptor limit to min(want, hard); return it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def src_addr(i):
    """The i-th attack connection's source address: 127.1.x.y."""
    n = i // PER_ADDR
    return f"127.1.{(n // 250) % 250}.{1 + n % 250}"


def connect(port, i, timeout=10.0, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if rcvbuf is not None:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.bind((src_addr(i), 0))
        s.settimeout(timeout)
        s.connect(("127.0.0.1", port))
    except OSError:
        s.close()
        raise
    return s


# Replies a daemon may close a connection with (each documented in its
# README: limits, timeouts, errors, shutdown).
CLOSING = {
    "smtp": re.compile(rb"^(421|554) "),
    "pop3": re.compile(rb"^-ERR"),
}


def closing_ok(proto, last):
    """A server close after `last` (the last line it sent, or b"" when it
    said nothing) is a documented one."""
    return last == b"" or CLOSING[proto].match(last) is not None


class Conn:
    __slots__ = ("sock", "i", "script", "pos", "inbuf", "last", "closed", "why", "lines",
                 "sent")

    def __init__(self, sock, i, script):
        self.sock, self.i, self.script = sock, i, script
        self.pos = 0
        self.inbuf = b""
        self.last = b""
        self.closed = False
        self.why = None
        self.lines = 0
        self.sent = 0

    def take_input(self, data):
        self.inbuf += data
        if len(self.inbuf) > 65536:
            self.inbuf = self.inbuf[-4096:]
        *done, self.inbuf = self.inbuf.split(b"\n")
        for line in done:
            self.lines += 1
            self.last = line.rstrip(b"\r")[:200]


class Target:
    """One daemon's port under attack."""

    def __init__(self, name, port, proto, daemon):
        self.name, self.port, self.proto, self.daemon = name, port, proto, daemon

    def __repr__(self):
        return f"{self.name}:{self.port}"


class HeldConnections:
    """Connections held open by one thread (a selector loop) for the length
    of an attack; each tick may send a byte of its script. Subclasses say
    how each connection starts (setup) and what it sends (tick_bytes)."""

    name = "held"

    def __init__(self, targets, count, first_index=0, tick=1.0):
        self.targets = targets
        self.count = count
        self.first = first_index
        self.tick = tick
        self.conns = {t.name: [] for t in targets}
        self.failed = {t.name: 0 for t in targets}
        self.fail_why = {t.name: {} for t in targets}
        self.stop_ev = threading.Event()
        self.thread = None

    # -- overridable
    def script(self, target):
        return b""

    def setup(self, target, sock):
        """Blocking, per connection, before it is held (e.g. STARTTLS)."""

    def tick_bytes(self, conn):
        """What one tick sends on conn: one byte of its script by default."""
        if not conn.script:
            return b""
        b = conn.script[conn.pos % len(conn.script):conn.pos % len(conn.script) + 1]
        conn.pos += 1
        return b

    # -- mechanics
    def _open_one(self, target, i):
        try:
            s = connect(target.port, i, timeout=10)
            self.setup(target, s)
            s.setblocking(False)
            return target, Conn(s, i, self.script(target)), None
        except (OSError, ssl.SSLError, ValueError) as e:
            return target, None, (str(e) or type(e).__name__)[:80]

    def open(self, bound=60.0):
        """Open every connection (32 at a time); those not open within
        `bound` s count as failed."""
        jobs = []
        i = self.first
        for t in self.targets:
            for _ in range(self.count):
                jobs.append((t, i))
                i += 1
        ex = concurrent.futures.ThreadPoolExecutor(32)
        futs = {ex.submit(self._open_one, t, k): t for t, k in jobs}
        concurrent.futures.wait(futs, timeout=bound)
        # What has not started is dropped; what runs ends within its
        # socket timeouts.
        ex.shutdown(wait=True, cancel_futures=True)
        for f, t in futs.items():
            if f.cancelled():
                conn, why = None, f"not opened within {bound:.0f} s"
            else:
                _, conn, why = f.result()
            if conn is None:
                self.failed[t.name] += 1
                self.fail_why[t.name][why] = self.fail_why[t.name].get(why, 0) + 1
            else:
                self.conns[t.name].append(conn)

    def start(self):
        self.open()
        self.thread = threading.Thread(target=self._loop, daemon=True, name=self.name)
        self.thread.start()

    def _loop(self):
        sel = selectors.DefaultSelector()
        for lst in self.conns.values():
            for c in lst:
                sel.register(c.sock, selectors.EVENT_READ, c)
        next_tick = time.monotonic()
        while not self.stop_ev.is_set():
            now = time.monotonic()
            if now >= next_tick:
                next_tick = now + self.tick
                for lst in self.conns.values():
                    for c in lst:
                        if c.closed:
                            continue
                        b = self.tick_bytes(c)
                        if b:
                            try:
                                c.sent += c.sock.send(b)
                            except BlockingIOError:
                                pass
                            except OSError as e:
                                self._close(sel, c, f"send: {e.strerror}")
            for key, _ in sel.select(timeout=max(0.0, min(0.2, next_tick - time.monotonic()))):
                c = key.data
                try:
                    data = c.sock.recv(65536)
                except BlockingIOError:
                    continue
                except (OSError, ssl.SSLError) as e:
                    self._close(sel, c, f"recv: {getattr(e, 'strerror', None) or e}")
                    continue
                if not data:
                    self._close(sel, c, "eof")
                else:
                    c.take_input(data)
        sel.close()

    def _close(self, sel, c, why):
        c.closed = True
        c.why = why
        try:
            sel.unregister(c.sock)
        except (KeyError, ValueError):
            pass

    def stop(self):
        self.stop_ev.set()
        if self.thread is not None:
            self.thread.join(30)
        for lst in self.conns.values():
            for c in lst:
                try:
                    c.sock.close()
                except OSError:
                    pass

    def held(self, target):
        return sum(1 for c in self.conns[target.name] if not c.closed)

    def summary(self):
        """{target: dict(opened, failed, held, closed_by={last line: n},
        bad_close=[...])}: bad_close lists closes with an undocumented
        last line."""
        out = {}
        for t in self.targets:
            lst = self.conns[t.name]
            closed = {}
            bad = []
            for c in lst:
                if not c.closed:
                    continue
                key = c.last.decode("latin-1")[:60] or f"({c.why})"
                closed[key] = closed.get(key, 0) + 1
                if not closing_ok(t.proto, c.last):
                    bad.append(key)
            out[t.name] = dict(opened=len(lst), failed=self.failed[t.name],
                               failed_why=self.fail_why[t.name],
                               held=self.held(t), closed_by=closed, bad_close=bad[:5])
        return out


class SlowClients(HeldConnections):
    """count connections per target sending one byte a second: complete
    commands, slowly (EHLO then NOOPs; USER then CAPAs)."""

    name = "slow-clients"

    def script(self, target):
        if target.proto == "smtp":
            return b"EHLO slow.example\r\nNOOP\r\n"
        return b"USER slow\r\nCAPA\r\n"

    def tick_bytes(self, conn):
        # The script's first line once, then the rest over and over.
        s = conn.script
        first = s.index(b"\n") + 1
        if conn.pos < first:
            b = s[conn.pos:conn.pos + 1]
        else:
            rest = s[first:]
            k = (conn.pos - first) % len(rest)
            b = rest[k:k + 1]
        conn.pos += 1
        return b


def client_hello():
    """The bytes of a TLS ClientHello (Python's default client)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def read_line(sock, timeout=10.0):
    """One line (without CRLF) from a blocking socket, byte by byte so
    nothing after it is consumed (STARTTLS)."""
    sock.settimeout(timeout)
    buf = b""
    while not buf.endswith(b"\n"):
        b = sock.recv(1)
        if not b:
            raise ConnectionError(f"closed after {buf!r}")
        buf += b
        if len(buf) > 4096:
            raise ValueError("overlong line")
    return buf.rstrip(b"\r\n")


def smtp_reply(sock, timeout=10.0):
    """(code, last line) of one SMTP reply, multi-line ones included."""
    while True:
        line = read_line(sock, timeout)
        if len(line) < 4 or not line[:3].isdigit():
            raise ValueError(f"not an SMTP reply: {line[:80]!r}")
        if line[3:4] != b"-":
            return int(line[:3]), line


class TlsStall(HeldConnections):
    """Connections that start TLS and stall in the handshake: `tls` targets
    are implicit-TLS ports, `starttls` targets get EHLO + STARTTLS (SMTP) or
    STLS (POP3) first. Even connections send nothing more, odd ones half a
    ClientHello."""

    name = "tls-stall"

    def __init__(self, targets, count, first_index=0):
        super().__init__(targets, count, first_index)
        self.hello = client_hello()

    def setup(self, target, s):
        if target.starttls:
            if target.proto == "smtp":
                code, line = smtp_reply(s)
                if code != 220:
                    raise ValueError(line.decode("latin-1"))
                s.sendall(b"EHLO stall.example\r\n")
                smtp_reply(s)
                s.sendall(b"STARTTLS\r\n")
                code, line = smtp_reply(s)
                if code != 220:
                    raise ValueError(line.decode("latin-1"))
            else:
                line = read_line(s)
                if not line.startswith(b"+OK"):
                    raise ValueError(line.decode("latin-1"))
                s.sendall(b"STLS\r\n")
                line = read_line(s)
                if not line.startswith(b"+OK"):
                    raise ValueError(line.decode("latin-1"))

    def script(self, target):
        return b""

    def tick_bytes(self, conn):
        if conn.pos == 0 and conn.i % 2 == 1:
            conn.pos = 1
            return self.hello[:len(self.hello) // 2]
        return b""

    def summary(self):
        # A TLS port's server close has no plaintext line; a TLS alert is
        # not a line either: every close counts as documented (the point is
        # that other sessions go on).
        out = super().summary()
        for v in out.values():
            v["bad_close"] = []
        return out


class TlsTarget(Target):
    def __init__(self, name, port, proto, daemon, starttls):
        super().__init__(name, port, proto, daemon)
        self.starttls = starttls


# Blocking one-connection attacks, run in a thread pool.

def exchange(sock, data, done, timeout):
    """Send data while reading; stop when done(received) is true, at EOF or
    after timeout. Returns (received, why) with why "done", "eof", "reset"
    (the server closed with our data unread), "timeout" or an error."""
    sock.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if data else 0))
    view = memoryview(data)
    got = bytearray()
    deadline = time.monotonic() + timeout
    why = "timeout"
    try:
        while time.monotonic() < deadline:
            for key, ev in sel.select(timeout=min(1.0, max(0.0, deadline - time.monotonic()))):
                if ev & selectors.EVENT_READ:
                    try:
                        chunk = sock.recv(65536)
                    except BlockingIOError:
                        chunk = None
                    except ConnectionResetError:
                        # A server that closes with our pipelined commands
                        # unread resets the connection (RFC 1122 4.2.2.13).
                        return bytes(got), "reset"
                    except OSError as e:
                        return bytes(got), f"recv: {e.strerror}"
                    if chunk == b"":
                        return bytes(got), "eof"
                    if chunk:
                        got += chunk
                        if len(got) > (1 << 20):
                            del got[:len(got) - (1 << 19)]
                        if done(got):
                            return bytes(got), "done"
                if ev & selectors.EVENT_WRITE and len(view):
                    try:
                        n = sock.send(view[:262144])
                        view = view[n:]
                    except BlockingIOError:
                        pass
                    except OSError as e:
                        if e.errno in (errno.EPIPE, errno.ECONNRESET):
                            # The server closed on us: what it said is read, or lost.
                            return bytes(got), "reset"
                        return bytes(got), f"send: {e.strerror}"
                    if not len(view):
                        sel.modify(sock, selectors.EVENT_READ)
        return bytes(got), why
    finally:
        sel.close()


def lines_of(data):
    return [l.rstrip(b"\r") for l in bytes(data).split(b"\n")[:-1]]


def smtp_replies(data):
    """The SMTP replies in data: [(code, last line)]; raises ValueError on
    a line that is not a reply."""
    out = []
    for line in lines_of(data):
        if len(line) < 4 or not line[:3].isdigit() or line[3:4] not in (b" ", b"-"):
            raise ValueError(f"not an SMTP reply line: {line[:80]!r}")
        if line[3:4] == b" ":
            out.append((int(line[:3]), line))
    return out


def pop_replies(data):
    """The single-line POP3 replies in data; raises ValueError on a line that
    is neither +OK nor -ERR."""
    out = []
    for line in lines_of(data):
        if not (line.startswith(b"+OK") or line.startswith(b"-ERR")):
            raise ValueError(f"not a POP3 status line: {line[:80]!r}")
        out.append(line)
    return out


def pop_login(port, i, user, password, timeout=10.0, rcvbuf=None):
    s = connect(port, i, timeout, rcvbuf)
    try:
        for cmd in (None, f"USER {user}\r\n", f"PASS {password}\r\n"):
            if cmd is not None:
                s.sendall(cmd.encode())
            line = read_line(s, timeout)
            if not line.startswith(b"+OK"):
                raise ValueError(f"login {user}: {line[:80]!r}")
    except Exception:
        s.close()
        raise
    return s


def smtp_open(port, i, timeout=10.0, rcvbuf=None):
    s = connect(port, i, timeout, rcvbuf)
    try:
        code, line = smtp_reply(s, timeout)
        if code != 220:
            raise ValueError(f"greeting: {line[:80]!r}")
        s.sendall(b"EHLO attack.example\r\n")
        code, line = smtp_reply(s, timeout)
        if code != 250:
            raise ValueError(f"EHLO: {line[:80]!r}")
    except Exception:
        s.close()
        raise
    return s


class Outcome:
    """What the sessions of a one-shot attack saw: counts by result, and
    the problems (an answer that is not the documented one)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.problems = []

    def add(self, target, result, problem=None):
        with self.lock:
            key = f"{target}: {result}"
            self.counts[key] = self.counts.get(key, 0) + 1
            if problem and len(self.problems) < 20:
                self.problems.append(f"{target}: {problem}")

    def summary(self):
        return dict(counts=self.counts, problems=self.problems)


def run_pool(jobs, workers=16, bound=120.0):
    """Run callables in a pool; those not started within `bound` s are
    dropped (each bounds its own waits). Re-raises the first exception."""
    ex = concurrent.futures.ThreadPoolExecutor(workers)
    futs = [ex.submit(j) for j in jobs]
    concurrent.futures.wait(futs, timeout=bound)
    ex.shutdown(wait=True, cancel_futures=True)
    for f in futs:
        if not f.cancelled() and f.exception() is not None:
            raise f.exception()


# (d) a 10 MB command line

BIG_LINE = 10 << 20


def long_line_one(out, target, i, login=None):
    """A 10 MB line, then a normal command: the overlong line must get an
    error reply (SMTP 5xx, POP3 -ERR) and the next command its answer, or
    the connection closes after a documented reply."""
    name = target.name + (" (logged in)" if login else "")
    try:
        if target.proto == "smtp":
            s = smtp_open(target.port, i)
            tail = b"\r\nNOOP\r\n"
            head = b"NOOP "
        elif login:
            s = pop_login(target.port, i, *login)
            tail = b"\r\nSTAT\r\n"
            head = b"STAT "
        else:
            s = connect(target.port, i)
            read_line(s)
            tail = b"\r\nUSER after.long.line\r\n"
            head = b"USER "
    except Exception as e:
        out.add(name, "set-up failed", f"set-up: {e}")
        return
    with s:
        payload = head + b"x" * BIG_LINE + tail
        if target.proto == "smtp":
            def done(got):
                try:
                    return len(smtp_replies(got)) >= 2
                except ValueError:
                    return True
        else:
            def done(got):
                return len(lines_of(got)) >= 2
        got, why = exchange(s, payload, done, 60)
        try:
            if target.proto == "smtp":
                reps = smtp_replies(got)
                first = reps[0][1] if reps else b""
                ok_first = bool(reps) and reps[0][0] >= 500
                ok_next = len(reps) >= 2 and reps[1][0] == 250
            else:
                reps = pop_replies(got)
                first = reps[0] if reps else b""
                ok_first = bool(reps) and first.startswith(b"-ERR")
                ok_next = len(reps) >= 2 and reps[1].startswith(b"+OK")
        except ValueError as e:
            out.add(name, "malformed reply", str(e))
            return
        first_s = first.decode("latin-1")[:50]
        if ok_first and ok_next:
            out.add(name, f"{first_s} / next command answered")
        elif ok_first and why in ("eof", "reset"):
            out.add(name, f"{first_s} / closed")
        elif why in ("eof", "reset") and closing_ok(target.proto, first):
            out.add(name, f"closed after {first_s or 'nothing'}")
        else:
            out.add(name, f"{why}: {first_s}",
                    f"10 MB line: {why}, replies {[r for r in reps][:3]!r}")


# (e) NUL and 8-bit bytes

SMTP_GARBAGE = [b"NO\x00OP", b"\x00\x00\x00", b"MAIL FROM:<a\x00b@remote.test>",
                b"HELO \xff\xfe\xfd", b"MAIL FROM:<\xe9\xe8@remote.test>",
                b"RCPT TO:<\xff@example.test>", b"\x80\x81\x82\x83", b"NOOP \xff",
                b"RSET\x00"]
POP_GARBAGE_PRE = [b"US\x00ER x", b"\x00\x00", b"CAPA\xff", b"USER \xe9t\xe9",
                   b"\x80\x81", b"USER a\x00b", b"QUIT\x00"]
POP_GARBAGE_POST = [b"ST\x00AT", b"RETR \xff", b"LIST 1\x00", b"\x80\x81",
                    b"UIDL \xe9", b"NOOP\x00x", b"DELE \x00"]


def nul_8bit_one(out, target, i, login=None):
    """Each garbage line gets one well-formed reply, then the session goes on
    (a final check command answered, QUIT answered) -- or it closes with a
    documented reply (too many errors)."""
    name = target.name + (" (logged in)" if login else "")
    try:
        if target.proto == "smtp":
            s = smtp_open(target.port, i)
            garbage = SMTP_GARBAGE
            check = [b"RSET", b"NOOP", b"QUIT"]
        elif login:
            s = pop_login(target.port, i, *login)
            garbage = POP_GARBAGE_POST
            check = [b"STAT", b"QUIT"]
        else:
            s = connect(target.port, i)
            read_line(s)
            garbage = POP_GARBAGE_PRE
            check = [b"USER fine", b"QUIT"]
    except Exception as e:
        out.add(name, "set-up failed", f"set-up: {e}")
        return
    with s:
        cmds = garbage + check
        want = len(cmds)
        payload = b"".join(c + b"\r\n" for c in cmds)
        if target.proto == "smtp":
            def done(got):
                try:
                    return len(smtp_replies(got)) >= want
                except ValueError:
                    return True
        else:
            def done(got):
                return len(lines_of(got)) >= want
        # One command at a time would take long; RFC 2920 / RFC 2449
        # pipelining lets the client send them at once.
        got, why = exchange(s, payload, done, 30)
        try:
            if target.proto == "smtp":
                reps = [(c, l) for c, l in smtp_replies(got)]
                codes = [c for c, _ in reps]
                last = reps[-1][1] if reps else b""
                ok = len(reps) == want and codes[-1] == 221 and codes[-2] == 250
            else:
                reps = pop_replies(got)
                codes = [r[:4] for r in reps]
                last = reps[-1] if reps else b""
                ok = len(reps) == want and all(r.startswith(b"+OK") for r in reps[-len(check):])
        except ValueError as e:
            out.add(name, "malformed reply", str(e))
            return
        if ok:
            out.add(name, "every line answered, session went on")
        elif why in ("eof", "reset", "done") and closing_ok(target.proto, last):
            out.add(name, f"closed after {last.decode('latin-1')[:50]!r}")
        else:
            out.add(name, f"{why} after {len(reps)}/{want} replies",
                    f"NUL/8-bit: {why} after {len(reps)}/{want} replies, last "
                    f"{last[:80]!r}")


# (c) pipelined command floods

def flood_one(out, target, i, seconds, kind, login=None):
    """Pipelined batches of a command for `seconds`, every reply read and
    checked; a session the server ends (with a documented reply) is opened
    again. kind: "ehlo" (SMTP, never an error), "noop" (SMTP junk: 421
    after max_junk_commands), "rcpt" (SMTP errors: 421 after max_errors),
    "user" (POP3 before login), "stat" (POP3 logged in). Returns the
    replies read."""
    name = f"{target.name} {kind}" + (" (logged in)" if login else "")
    cmd = {"ehlo": b"EHLO flood.example\r\n", "noop": b"NOOP\r\n",
           "rcpt": b"RCPT TO:<nobody@example.test>\r\n", "user": b"USER flood\r\n",
           "stat": b"STAT\r\n"}[kind]
    batch = 200
    answered = 0
    sessions = 0
    closes = {}
    deadline = time.monotonic() + seconds
    if target.proto == "smtp":
        def done(got):
            try:
                return len(smtp_replies(got)) >= batch
            except ValueError:
                return True
    else:
        def done(got):
            return len(lines_of(got)) >= batch
    while time.monotonic() < deadline and sessions < 1000:
        sessions += 1
        try:
            if target.proto == "smtp":
                s = smtp_open(target.port, i)
            elif login:
                s = pop_login(target.port, i, *login)
            else:
                s = connect(target.port, i)
                read_line(s)
        except Exception as e:
            out.add(name, "set-up failed", f"set-up: {e}")
            return answered
        last = b""
        with s:
            while time.monotonic() < deadline:
                got, why = exchange(s, cmd * batch, done, 30)
                try:
                    if target.proto == "smtp":
                        reps = smtp_replies(got)
                        last = reps[-1][1] if reps else last
                        good = all(c in (250, 503, 421) for c, _ in reps)
                    else:
                        reps = pop_replies(got)
                        last = reps[-1] if reps else last
                        good = all(r.startswith(b"+OK") for r in reps[:-1])
                except ValueError as e:
                    out.add(name, "malformed reply", str(e))
                    return answered
                answered += len(reps)
                if not good:
                    out.add(name, "unexpected reply", f"flood: {reps[:3]!r}")
                    return answered
                if why in ("eof", "reset"):
                    if not closing_ok(target.proto, last):
                        out.add(name, "closed", f"flood: closed after {last[:80]!r}")
                        return answered
                    key = last.decode("latin-1")[:60]
                    closes[key] = closes.get(key, 0) + 1
                    break
                if why != "done":
                    out.add(name, why, f"flood: {why} after {answered} replies")
                    return answered
    what = f"{answered} replies in {sessions} sessions"
    if closes:
        what += f", closed with {sorted(closes)}"
    out.add(name, what)
    return answered


# (b) connections that never read

class NoRead:
    """Sessions that stop reading: RETR of a large message (through the MMP
    and from the store directly), and SMTP sessions that pipeline EHLO
    until the MTA stops reading (its replies fill the socket), capped at
    `cap` bytes a session. Held until stop()."""

    def __init__(self, mmp_target, retr_logins, smtp_target, smtp_count, first_index,
                 cap=64 << 20):
        self.mmp_target = mmp_target
        self.retr_logins = retr_logins      # [(target, user, password)]
        self.smtp_target = smtp_target
        self.smtp_count = smtp_count
        self.first = first_index
        self.cap = cap
        self.socks = []
        self.out = Outcome()
        self.smtp_sent = []
        self.lock = threading.Lock()

    def _retr(self, target, i, user, password):
        try:
            s = pop_login(target.port, i, user, password, rcvbuf=4096)
        except Exception as e:
            self.out.add(target.name, "login failed", f"RETR never read: login {user}: {e}")
            return
        try:
            s.sendall(b"RETR 1\r\n")
        except OSError as e:
            self.out.add(target.name, "send failed", str(e))
            s.close()
            return
        with self.lock:
            self.socks.append((target, s))
        self.out.add(target.name, "RETR sent, never read")

    def _smtp(self, i):
        t = self.smtp_target
        try:
            s = smtp_open(t.port, i, rcvbuf=4096)
        except Exception as e:
            self.out.add(t.name, "set-up failed", f"never read: {e}")
            return
        s.setblocking(False)
        chunk = b"EHLO noread.example\r\n" * 512
        sent = 0
        stalled_since = None
        deadline = time.monotonic() + 20
        while sent < self.cap and time.monotonic() < deadline:
            try:
                sent += s.send(chunk)
                stalled_since = None
            except BlockingIOError:
                now = time.monotonic()
                if stalled_since is None:
                    stalled_since = now
                elif now - stalled_since > 2.0:
                    break
                time.sleep(0.05)
            except OSError as e:
                self.out.add(t.name, f"closed by the MTA ({e.strerror})")
                s.close()
                return
        with self.lock:
            self.socks.append((t, s))
            self.smtp_sent.append(sent)
        if sent >= self.cap:
            self.out.add(t.name, "the MTA read everything sent",
                         f"never read: the MTA read {sent >> 20} MiB of pipelined "
                         "commands without its replies being read")
        else:
            self.out.add(t.name, "the MTA stopped reading")

    def start(self):
        jobs = []
        i = self.first
        for target, user, password in self.retr_logins:
            jobs.append(lambda t=target, k=i, u=user, p=password: self._retr(t, k, u, p))
            i += 1
        for _ in range(self.smtp_count):
            jobs.append(lambda k=i: self._smtp(k))
            i += 1
        run_pool(jobs, workers=16, bound=90)

    def alive(self):
        """How many held sessions the servers have not closed."""
        n = 0
        with self.lock:
            for _, s in self.socks:
                try:
                    s.setblocking(False)
                    data = s.recv(1, socket.MSG_PEEK)
                    if data:
                        n += 1
                except BlockingIOError:
                    n += 1
                except OSError:
                    pass
        return n

    def stop(self):
        with self.lock:
            for _, s in self.socks:
                try:
                    s.close()
                except OSError:
                    pass
            self.socks = []

    def summary(self):
        d = self.out.summary()
        if self.smtp_sent:
            d["smtp_sent_kib"] = sorted(n >> 10 for n in self.smtp_sent)
        return d
