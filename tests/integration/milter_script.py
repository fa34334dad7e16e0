"""milter_script -- a scripted Sendmail milter (protocol version 6) for the
MTA's milter tests (#17): a server the MTA connects to, answering each
command as the test's script says and recording everything it received.
Standard library only.

    import milter_script as ms

    script = ms.Script(
        protocol=ms.SMFIP_NR_HDR,                  # no reply to headers
        on={"rcpt": ms.by_rcpt({"bad@example.test":
                                ms.replycode("550 5.7.1 go away")}),
            "eom": ms.ACCEPT},
        mods=[ms.add_header("X-Scanned", "yes"),
              ms.replace_body(b"new body\\r\\n", chunks=2)])
    with ms.MilterServer(script) as milter:        # inet:127.0.0.1:PORT
        ... configure the MTA with milter.address, send mail ...
        s = milter.wait_sessions(1)[0]
        assert s.names() == ["optneg", "connect", "helo", ...]  # no "macro"
        assert s.messages[0].headers[0] == ("From", "a@b.test")
        assert s.macros["mail"]["{auth_authen}"] == "alice"

A script says, for each stage ("connect", "helo", "mail", "rcpt", "data",
"header", "eoh", "body", "eom", "unknown", and "optneg"), what to answer:
a Reply (CONTINUE, ACCEPT, REJECT, TEMPFAIL, DISCARD, SKIP, replycode(...),
or sleep()/progress()/close()/garbage() wrapped around one), or a callable
taking (session, command) and returning a Reply or None (None: the
default). Stages not named get CONTINUE, and no answer at all when the
negotiated protocol flags include the stage's SMFIP_NR_* bit or SMFIP_NR_HDR
for headers (an explicit Reply is still sent there, as a deliberate
protocol violation). At end of body the modifications in `mods` are sent
first (each a Packet: add_header(), insert_header(), change_header(),
delete_header(), add_rcpt(), add_rcpt_par(), del_rcpt(), change_from(),
quarantine(), replace_body() which gives several packets), then the eom
reply (default CONTINUE, which at end of body means accept). A delay on
the eom reply comes before the modifications.

OPTNEG: Script(version=, actions=, protocol=, symlists=) is the reply
(actions and protocol ANDed with the MTA's offer unless exact=True, so a
test can also send flags the MTA did not offer); on["optneg"] = sleep(n)
delays it, close() / garbage() / any other Reply replaces it.

The records: MilterServer.sessions is a list of Session, one per accepted
connection, each with .commands (Command: .code, .name, .fields (decoded),
.data (raw), .macros (the macros the MTA sent for that command just
before it), .time), .macros (stage name -> the last macros dict for it),
.optneg (what the MTA offered: version, actions, protocol), .messages
(Message per MAIL: .mail, .rcpts, .headers, .body, .eom, .aborted,
header(name)), .message (the last), find(stage) (its Commands),
names() (stage names in order, macros left out unless asked for),
.negotiated (actions and protocol we answered), .replies ((stage, what
was sent) in order), .connects, .closed_by ("mta" on EOF, QUIT or a
failed send, "milter" when the script closed it, "error" on a read
timeout) and .errors (framing problems seen). Read them after
wait_sessions(n) (which waits for the sessions to end) or
wait_command(stage, count).

Trust boundary: test code; the MTA under test is the peer and is not
trusted: every read has a timeout, a packet over 64 MiB is an error, and
every wait is bounded. Protocol: Sendmail's libmilter/mfdef.h (v6), as
the MTA side in lib-mail/milter-proto.h uses it.
"""

import os
import select
import socket
import struct
import threading
import time

# Commands (MTA -> milter), SMFIC_*.
SMFIC_ABORT = b"A"
SMFIC_BODY = b"B"
SMFIC_CONNECT = b"C"
SMFIC_MACRO = b"D"
SMFIC_BODYEOB = b"E"
SMFIC_HELO = b"H"
SMFIC_QUIT_NC = b"K"
SMFIC_HEADER = b"L"
SMFIC_MAIL = b"M"
SMFIC_EOH = b"N"
SMFIC_OPTNEG = b"O"
SMFIC_QUIT = b"Q"
SMFIC_RCPT = b"R"
SMFIC_DATA = b"T"
SMFIC_UNKNOWN = b"U"

# Replies and modifications (milter -> MTA), SMFIR_*.
SMFIR_ADDRCPT = b"+"
SMFIR_DELRCPT = b"-"
SMFIR_ADDRCPT_PAR = b"2"
SMFIR_SHUTDOWN = b"4"
SMFIR_ACCEPT = b"a"
SMFIR_REPLBODY = b"b"
SMFIR_CONTINUE = b"c"
SMFIR_DISCARD = b"d"
SMFIR_CHGFROM = b"e"
SMFIR_CONN_FAIL = b"f"
SMFIR_ADDHEADER = b"h"
SMFIR_INSHEADER = b"i"
SMFIR_SETSYMLIST = b"l"
SMFIR_CHGHEADER = b"m"
SMFIR_PROGRESS = b"p"
SMFIR_QUARANTINE = b"q"
SMFIR_REJECT = b"r"
SMFIR_SKIP = b"s"
SMFIR_TEMPFAIL = b"t"
SMFIR_REPLYCODE = b"y"

# Actions the milter may take (optneg), SMFIF_*.
SMFIF_ADDHDRS = 0x001
SMFIF_CHGBODY = 0x002
SMFIF_ADDRCPT = 0x004
SMFIF_DELRCPT = 0x008
SMFIF_CHGHDRS = 0x010
SMFIF_QUARANTINE = 0x020
SMFIF_CHGFROM = 0x040
SMFIF_ADDRCPT_PAR = 0x080
SMFIF_SETSYMLIST = 0x100
SMFIF_ALL = 0x1FF

# Protocol flags (optneg), SMFIP_*.
SMFIP_NOCONNECT = 0x00000001
SMFIP_NOHELO = 0x00000002
SMFIP_NOMAIL = 0x00000004
SMFIP_NORCPT = 0x00000008
SMFIP_NOBODY = 0x00000010
SMFIP_NOHDRS = 0x00000020
SMFIP_NOEOH = 0x00000040
SMFIP_NR_HDR = 0x00000080
SMFIP_NOUNKNOWN = 0x00000100
SMFIP_NODATA = 0x00000200
SMFIP_SKIP = 0x00000400
SMFIP_RCPT_REJ = 0x00000800
SMFIP_NR_CONN = 0x00001000
SMFIP_NR_HELO = 0x00002000
SMFIP_NR_MAIL = 0x00004000
SMFIP_NR_RCPT = 0x00008000
SMFIP_NR_DATA = 0x00010000
SMFIP_NR_UNKN = 0x00020000
SMFIP_NR_EOH = 0x00040000
SMFIP_NR_BODY = 0x00080000
SMFIP_HDR_LEADSPC = 0x00100000
SMFIP_MDS_256K = 0x10000000
SMFIP_MDS_1M = 0x20000000

# Macro stages for SETSYMLIST, SMFIM_*.
SMFIM_CONNECT = 0
SMFIM_HELO = 1
SMFIM_ENVFROM = 2
SMFIM_ENVRCPT = 3
SMFIM_DATA = 4
SMFIM_EOM = 5
SMFIM_EOH = 6

MILTER_VERSION = 6
MAX_PACKET = 64 << 20
MILTER_CHUNK_SIZE = 65535       # libmilter's largest body chunk

# Command code -> stage name (what Script.on is keyed by).
STAGES = {
    SMFIC_OPTNEG: "optneg", SMFIC_MACRO: "macro", SMFIC_CONNECT: "connect",
    SMFIC_HELO: "helo", SMFIC_MAIL: "mail", SMFIC_RCPT: "rcpt",
    SMFIC_DATA: "data", SMFIC_HEADER: "header", SMFIC_EOH: "eoh",
    SMFIC_BODY: "body", SMFIC_BODYEOB: "eom", SMFIC_ABORT: "abort",
    SMFIC_QUIT: "quit", SMFIC_QUIT_NC: "quit_nc", SMFIC_UNKNOWN: "unknown",
}
# The no-reply flag of each stage that has one.
NO_REPLY_FLAGS = {
    "connect": SMFIP_NR_CONN, "helo": SMFIP_NR_HELO, "mail": SMFIP_NR_MAIL,
    "rcpt": SMFIP_NR_RCPT, "data": SMFIP_NR_DATA, "header": SMFIP_NR_HDR,
    "eoh": SMFIP_NR_EOH, "body": SMFIP_NR_BODY, "unknown": SMFIP_NR_UNKN,
}
# Commands that get no reply whatever the flags.
NEVER_REPLIED = ("macro", "abort", "quit", "quit_nc")


class MilterError(Exception):
    """The peer broke the framing or went away."""


# Framing, shared by the server here and by MTA-side test clients

def encode_packet(code, data=b""):
    """One packet: uint32 length (command octet + data), command, data."""
    if isinstance(data, str):
        data = data.encode()
    return struct.pack("!I", len(data) + 1) + code + data


def recv_exact(sock, n):
    """n bytes from sock; MilterError on EOF (the socket's timeout applies)."""
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise MilterError(f"EOF after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def read_packet(sock):
    """(code, data) of the next packet; MilterError on EOF or bad length."""
    (length,) = struct.unpack("!I", recv_exact(sock, 4))
    if length < 1 or length > MAX_PACKET:
        raise MilterError(f"bad packet length {length}")
    body = recv_exact(sock, length)
    return body[:1], body[1:]


def cstrings(data):
    """The NUL-terminated strings of data, decoded (a missing final NUL is
    tolerated: the last piece is kept)."""
    parts = data.split(b"\0")
    if parts and parts[-1] == b"":
        parts.pop()
    return [p.decode("utf-8", "surrogateescape") for p in parts]


def cstr(*strings):
    """The strings each NUL-terminated, as bytes."""
    return b"".join((s.encode() if isinstance(s, str) else s) + b"\0"
                    for s in strings)


def decode_optneg(data):
    """dict(version, actions, protocol, symlists) of an OPTNEG packet (either
    direction; symlists only in the milter's reply: stage -> names)."""
    if len(data) < 12:
        raise MilterError(f"short OPTNEG ({len(data)} bytes)")
    version, actions, protocol = struct.unpack("!III", data[:12])
    symlists = {}
    rest = data[12:]
    while len(rest) >= 4:
        (stage,) = struct.unpack("!I", rest[:4])
        names, _, rest = rest[4:].partition(b"\0")
        symlists[stage] = names.decode()
    return {"version": version, "actions": actions, "protocol": protocol,
            "symlists": symlists}


def decode_command(code, data):
    """The fields of one MTA command as a dict (see the protocol header)."""
    if code == SMFIC_OPTNEG:
        return decode_optneg(data)
    if code == SMFIC_MACRO:
        names = cstrings(data[1:])
        pairs = dict(zip(names[0::2], names[1::2]))
        return {"for": STAGES.get(data[:1], data[:1].decode("latin-1")),
                "macros": pairs}
    if code == SMFIC_CONNECT:
        host, _, rest = data.partition(b"\0")
        fields = {"hostname": host.decode("utf-8", "surrogateescape"),
                  "family": rest[:1].decode("latin-1")}
        if fields["family"] in ("4", "6", "L") and len(rest) >= 3:
            (fields["port"],) = struct.unpack("!H", rest[1:3])
            fields["address"] = rest[3:].rstrip(b"\0").decode()
        return fields
    if code in (SMFIC_HELO, SMFIC_UNKNOWN):
        return {"text": (cstrings(data) or [""])[0]}
    if code in (SMFIC_MAIL, SMFIC_RCPT):
        args = cstrings(data)
        return {"address": args[0] if args else "", "args": args[1:]}
    if code == SMFIC_HEADER:
        name, _, rest = data.partition(b"\0")
        value = rest[:-1] if rest.endswith(b"\0") else rest
        return {"name": name.decode("utf-8", "surrogateescape"),
                "value": value.decode("utf-8", "surrogateescape")}
    if code in (SMFIC_BODY, SMFIC_BODYEOB):
        return {"chunk": data}
    return {}


# Replies and modifications

class Packet:
    """A packet the milter sends: code and data."""

    def __init__(self, code, data=b""):
        self.code = code
        self.data = data.encode() if isinstance(data, str) else data

    def encode(self):
        return encode_packet(self.code, self.data)

    def __repr__(self):
        return f"Packet({self.code!r}, {self.data!r})"


class Reply:
    """The answer to one command: a packet, optionally after a delay (with
    PROGRESS packets every `progress` seconds while waiting), or instead of
    it: close the connection (close=True) or send raw bytes (garbage)."""

    def __init__(self, code=SMFIR_CONTINUE, data=b"", delay=0.0,
                 progress=None, close=False, garbage=None, then_close=False):
        self.packet = Packet(code, data)
        self.delay = delay
        self.progress = progress
        self.close = close
        self.garbage = garbage
        self.then_close = then_close

    def __repr__(self):
        what = ("close" if self.close else f"garbage {self.garbage!r}"
                if self.garbage is not None else repr(self.packet))
        return f"Reply({what}, delay={self.delay}, progress={self.progress})"


CONTINUE = Reply(SMFIR_CONTINUE)
ACCEPT = Reply(SMFIR_ACCEPT)
REJECT = Reply(SMFIR_REJECT)
TEMPFAIL = Reply(SMFIR_TEMPFAIL)
DISCARD = Reply(SMFIR_DISCARD)
SKIP = Reply(SMFIR_SKIP)


def replycode(text):
    """SMFIR_REPLYCODE: e.g. "550 5.7.1 no thanks" (a multi-line reply is
    "550-5.7.1 first\\r\\n550 5.7.1 last")."""
    return Reply(SMFIR_REPLYCODE, cstr(text))


def sleep(seconds, then=CONTINUE):
    """Wait seconds before sending `then` (to run into the MTA's timeout)."""
    return Reply(then.packet.code, then.packet.data, delay=seconds,
                 close=then.close, garbage=then.garbage)


def progress(seconds, every=1.0, then=CONTINUE):
    """Wait seconds, sending SMFIR_PROGRESS every `every` seconds, then
    send `then`."""
    return Reply(then.packet.code, then.packet.data, delay=seconds,
                 progress=every, close=then.close, garbage=then.garbage)


def close(after=0.0):
    """Close the connection instead of answering (after `after` seconds)."""
    return Reply(close=True, delay=after)


def garbage(data=b"\xff\xff\xff\xffjunk", then_close=False):
    """Send these raw bytes instead of a reply (default: a length of
    4 GiB - 1, which no MTA should accept)."""
    return Reply(garbage=data, then_close=then_close)


def by_rcpt(table, default=None):
    """A callable for Script.on["rcpt"]: the Reply for the recipient's
    address (with or without <>, case-insensitive), else default."""
    norm = {k.strip("<>").lower(): v for k, v in table.items()}

    def pick(session, command):
        return norm.get(command.fields["address"].strip("<>").lower(), default)
    return pick


def add_header(name, value):
    return Packet(SMFIR_ADDHEADER, cstr(name, value))


def insert_header(index, name, value):
    return Packet(SMFIR_INSHEADER, struct.pack("!I", index) + cstr(name, value))


def change_header(index, name, value):
    """The index-th (1-based) header called name gets value ("" deletes)."""
    return Packet(SMFIR_CHGHEADER, struct.pack("!I", index) + cstr(name, value))


def delete_header(index, name):
    return change_header(index, name, "")


def add_rcpt(address):
    return Packet(SMFIR_ADDRCPT, cstr(address))


def add_rcpt_par(address, args=""):
    return Packet(SMFIR_ADDRCPT_PAR, cstr(address, args))


def del_rcpt(address):
    return Packet(SMFIR_DELRCPT, cstr(address))


def change_from(address, args=None):
    return Packet(SMFIR_CHGFROM, cstr(address) if args is None
                  else cstr(address, args))


def quarantine(reason):
    return Packet(SMFIR_QUARANTINE, cstr(reason))


def replace_body(data, chunks=1):
    """SMFIR_REPLBODY packets carrying data split into `chunks` pieces (or
    at the given list of sizes)."""
    if isinstance(data, str):
        data = data.encode()
    if isinstance(chunks, int):
        size = max(1, -(-len(data) // max(1, chunks)))
        sizes = [size] * max(1, chunks)
    else:
        sizes = list(chunks)
    out, pos = [], 0
    for n in sizes:
        if pos >= len(data) and out:
            break
        out.append(Packet(SMFIR_REPLBODY, data[pos:pos + n]))
        pos += n
    if pos < len(data):
        out.append(Packet(SMFIR_REPLBODY, data[pos:]))
    return out


class Script:
    """What the milter negotiates and answers (see the module's doc).

    version, actions, protocol: the OPTNEG reply's fields (actions and
    protocol are ANDed with what the MTA offered unless exact=True, as
    libmilter does). symlists: {SMFIM_stage: "macro names"} sent as the
    optional SETSYMLIST part of the reply. on: stage -> Reply or callable.
    mods: the end-of-body modifications (Packets, lists of Packets as
    replace_body() gives, or a callable (session, command) -> list)."""

    def __init__(self, version=MILTER_VERSION, actions=SMFIF_ALL, protocol=0,
                 symlists=None, on=None, mods=(), exact=False):
        self.version = version
        self.actions = actions
        self.protocol = protocol
        self.symlists = dict(symlists or {})
        self.on = dict(on or {})
        self.mods = mods
        self.exact = exact

    def optneg_reply(self, offered):
        actions, protocol = self.actions, self.protocol
        if not self.exact:
            actions &= offered["actions"]
            protocol &= offered["protocol"]
        data = struct.pack("!III", self.version, actions, protocol)
        for stage, names in sorted(self.symlists.items()):
            data += struct.pack("!I", stage) + cstr(names)
        return data, actions, protocol

    def eom_mods(self, session, command):
        mods = self.mods(session, command) if callable(self.mods) else self.mods
        out = []
        for m in mods:
            out.extend(m if isinstance(m, (list, tuple)) else [m])
        return out


# Records

class Command:
    """One command received: code, stage name, decoded fields, raw data,
    the macros sent for it, and when (time.monotonic())."""

    def __init__(self, code, data, macros):
        self.code = code
        self.name = STAGES.get(code, code.decode("latin-1"))
        self.data = data
        self.fields = decode_command(code, data)
        self.macros = macros
        self.time = time.monotonic()

    def __repr__(self):
        return f"Command({self.name}, {self.fields!r})"


class Message:
    """One transaction: from MAIL to end of body or abort."""

    def __init__(self, mail):
        self.mail = mail
        self.rcpts = []
        self.headers = []       # (name, value) as received
        self.body = b""
        self.eom = False
        self.aborted = False

    def header(self, name):
        """Values of the headers called name (case-insensitive)."""
        return [v for n, v in self.headers if n.lower() == name.lower()]


class Session:
    """What one connection from the MTA brought."""

    def __init__(self, index):
        self.index = index
        self.commands = []
        self.macros = {}        # stage name -> {macro: value}, last sent
        self.optneg = None      # what the MTA offered
        self.negotiated = None  # dict(actions, protocol) we answered
        self.messages = []
        self.replies = []       # (stage, Reply or Packet) sent, in order
        self.closed_by = None
        self.errors = []
        self.connects = 0       # CONNECTs (QUIT_NC starts another)
        self.done = threading.Event()

    def names(self, include_macros=False):
        """Stage names of the commands in order (macros left out unless
        asked for)."""
        return [c.name for c in self.commands
                if include_macros or c.name != "macro"]

    def find(self, name):
        """The commands of one stage name."""
        return [c for c in self.commands if c.name == name]

    @property
    def message(self):
        """The last message (None before MAIL)."""
        return self.messages[-1] if self.messages else None

    def __repr__(self):
        return (f"Session({self.index}, {self.names()}, "
                f"closed_by={self.closed_by}, errors={self.errors})")


# The server

class MilterServer:
    """Listens on 127.0.0.1 (a free port, or `port`) or on a Unix socket
    (unix_path) and serves each connection with `script` in a thread of
    its own. Use as a context manager, or start()/stop()."""

    def __init__(self, script=None, unix_path=None, port=None,
                 host="127.0.0.1", io_timeout=60.0, name="milter-script"):
        self.script = script or Script()
        self.unix_path = unix_path
        self.host = host
        self.port = port
        self.io_timeout = io_timeout
        self.name = name
        self.sessions = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._listener = None
        self._threads = []
        self._conns = []

    @property
    def address(self):
        """The milter's address as the MTA is configured with it."""
        if self.unix_path:
            return f"unix:{self.unix_path}"
        return f"inet:{self.host}:{self.port}"

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        if self.unix_path:
            try:
                os.unlink(self.unix_path)
            except FileNotFoundError:
                pass
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(self.unix_path)
            os.chmod(self.unix_path, 0o666)
        else:
            s = self._bind_inet()
        s.listen(16)
        self._listener = s
        t = threading.Thread(target=self._accept_loop, daemon=True,
                             name=f"{self.name}:accept")
        t.start()
        self._threads.append(t)
        return self

    def _bind_inet(self):
        if self.port:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((self.host, self.port))
            return s
        import mtharness
        for _ in range(20):
            self.port = mtharness.free_port(self.host)
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((self.host, self.port))
                return s
            except OSError:
                s.close()
        raise OSError("no free port for the milter")

    def stop(self, timeout=5.0):
        """Close the listener and every connection; join the threads."""
        self._stopping.set()
        if self._listener is not None:
            self._listener.close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        if self.unix_path:
            try:
                os.unlink(self.unix_path)
            except FileNotFoundError:
                pass

    def wait_sessions(self, count, timeout=20.0, finished=True):
        """The first `count` sessions once there are that many (and, with
        finished, once each has ended); AssertionError after timeout."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.sessions) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"{self.name}: {len(self.sessions)} of {count} "
                        f"sessions within {timeout:.0f} s")
                self._changed.wait(left)
            out = self.sessions[:count]
        if finished:
            for s in out:
                if not s.done.wait(max(0.0, deadline - time.monotonic())):
                    raise AssertionError(f"{self.name}: session {s.index} "
                                         f"still open after {timeout:.0f} s: {s}")
        return out

    def wait_command(self, name, count=1, timeout=20.0):
        """Wait until `count` commands of stage `name` were received over
        all sessions; returns them."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                got = [c for s in self.sessions for c in s.commands
                       if c.name == name]
            if len(got) >= count:
                return got
            if time.monotonic() >= deadline:
                raise AssertionError(f"{self.name}: {len(got)} of {count} "
                                     f"{name} commands within {timeout:.0f} s")
            time.sleep(0.02)

    # Connection handling

    def _accept_loop(self):
        while not self._stopping.is_set():
            try:
                ready, _, _ = select.select([self._listener], [], [], 0.2)
                if not ready:
                    continue
                conn, _ = self._listener.accept()
            except (OSError, ValueError):
                return
            conn.settimeout(self.io_timeout)
            with self._changed:
                session = Session(len(self.sessions))
                self.sessions.append(session)
                self._conns.append(conn)
                self._changed.notify_all()
            t = threading.Thread(target=self._serve, args=(conn, session),
                                 daemon=True,
                                 name=f"{self.name}:{session.index}")
            t.start()
            self._threads.append(t)

    def _serve(self, conn, session):
        script = self.script
        pending = {}            # macros sent for the next command
        try:
            while not self._stopping.is_set():
                try:
                    code, data = read_packet(conn)
                except MilterError as e:
                    if "EOF after 0 of 4" not in str(e):
                        session.errors.append(str(e))
                    session.closed_by = "mta"
                    return
                except (socket.timeout, OSError) as e:
                    if not self._stopping.is_set():
                        session.errors.append(f"read: {e}")
                    session.closed_by = session.closed_by or "error"
                    return
                if code == SMFIC_MACRO:
                    cmd = Command(code, data, {})
                    session.commands.append(cmd)
                    pending[cmd.fields["for"]] = cmd.fields["macros"]
                    continue
                cmd = Command(code, data, {})
                cmd.macros = pending.pop(cmd.name, {})
                if cmd.macros:
                    session.macros[cmd.name] = cmd.macros
                session.commands.append(cmd)
                self._record(session, cmd)
                if cmd.name in ("quit",):
                    session.closed_by = "mta"
                    return
                if not self._answer(conn, session, script, cmd):
                    session.closed_by = session.closed_by or "milter"
                    return
        finally:
            try:
                conn.close()
            except OSError:
                pass
            with self._lock:
                if conn in self._conns:
                    self._conns.remove(conn)
            session.done.set()

    @staticmethod
    def _record(session, cmd):
        f = cmd.fields
        if cmd.name == "optneg":
            session.optneg = f
        elif cmd.name == "connect":
            session.connects += 1
        elif cmd.name == "mail":
            session.messages.append(Message(f["address"]))
        elif session.messages:
            m = session.messages[-1]
            if cmd.name == "rcpt":
                m.rcpts.append(f["address"])
            elif cmd.name == "header":
                m.headers.append((f["name"], f["value"]))
            elif cmd.name == "body":
                m.body += f["chunk"]
            elif cmd.name == "eom":
                m.body += f["chunk"]
                m.eom = True
            elif cmd.name == "abort" and not m.eom:
                m.aborted = True

    def _answer(self, conn, session, script, cmd):
        """Send what the script says for cmd; False to end the session."""
        if cmd.name == "optneg":
            choice = script.on.get("optneg")
            if callable(choice):
                choice = choice(session, cmd)
            data, actions, protocol = script.optneg_reply(cmd.fields)
            session.negotiated = {"actions": actions, "protocol": protocol}
            reply = Reply(SMFIC_OPTNEG, data)
            if choice is not None and (choice.close or choice.garbage is not None
                                       or choice.packet.code != SMFIR_CONTINUE):
                reply = choice          # instead of the OPTNEG reply
            elif choice is not None:    # sleep()/progress(): then OPTNEG
                reply = Reply(SMFIC_OPTNEG, data, delay=choice.delay,
                              progress=choice.progress)
            return self._send_reply(conn, session, cmd.name, reply)
        if cmd.name in NEVER_REPLIED:
            return True
        choice = script.on.get(cmd.name)
        if callable(choice):
            choice = choice(session, cmd)
        negotiated = (session.negotiated or {}).get("protocol", 0)
        if choice is None:
            if negotiated & NO_REPLY_FLAGS.get(cmd.name, 0):
                return True
            choice = CONTINUE
        if cmd.name == "eom" and not (choice.close or choice.garbage is not None):
            if choice.delay and not self._wait(conn, choice.delay,
                                               choice.progress):
                return False
            for packet in script.eom_mods(session, cmd):
                if not self._send(conn, session, "eom", packet):
                    return False
            return self._send(conn, session, "eom", choice.packet)
        return self._send_reply(conn, session, cmd.name, choice)

    def _send_reply(self, conn, session, stage, reply):
        if reply.delay:
            if not self._wait(conn, reply.delay, reply.progress):
                return False
        if reply.close:
            session.replies.append((stage, reply))
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return False
        if reply.garbage is not None:
            session.replies.append((stage, reply))
            try:
                conn.sendall(reply.garbage)
            except OSError:
                return False
            return not reply.then_close
        return self._send(conn, session, stage, reply.packet)

    def _send(self, conn, session, stage, packet):
        session.replies.append((stage, packet))
        try:
            conn.sendall(packet.encode())
            return True
        except OSError as e:
            session.errors.append(f"send {stage}: {e}")
            session.closed_by = "mta"
            return False

    def _wait(self, conn, seconds, every):
        """Sleep (interruptibly, by stop()), sending PROGRESS packets every
        `every` seconds if asked. False if stopped or the send failed."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            step = min(left, every) if every else left
            if self._stopping.wait(step):
                return False
            if every and deadline - time.monotonic() > 0:
                try:
                    conn.sendall(encode_packet(SMFIR_PROGRESS))
                except OSError:
                    return False
