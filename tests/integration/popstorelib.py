"""popstorelib -- what the mailtier-popstore integration tests share (stdlib
only): a real slapd with users (through mtharness and mailtierctl), a
mailtier.conf with [popstore.SHARD] sections on free ports, optional TLS
with a self-signed certificate made by openssl, starting the daemon through
the real sd-notify protocol, small LMTP/POP3 client helpers, and the
daemon's memory as /proc shows it.

    import mtharness, popstorelib
    def test(h):
        env = popstorelib.Env(h, tls=True)
        env.add_user("alice@example.test", "pw1", shard="s1")
        d = env.start("s1")
        replies = env.deliver("s1", "bob@x.test", ["alice@example.test"], msg)
        with env.pop("s1") as p: ...

Trust boundary: test code only; the daemon under test is not trusted to
behave, so every socket has a timeout.
"""

import imaplib
import os
import poplib
import smtplib
import socket
import ssl
import subprocess

import mtharness

DOMAIN = "example.test"
PROXY_USER = "mmp"
PROXY_PASSWORD = "proxy-secret-42"


def make_cert(directory, cn="localhost"):
    """A self-signed certificate and key (PEM) made with openssl."""
    cert = os.path.join(directory, "cert.pem")
    key = os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                    "-subj", f"/CN={cn}", "-keyout", key, "-out", cert],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def message(subject, body, extra_headers=""):
    """An RFC 5322 message with CRLF line ends (bytes)."""
    if isinstance(body, str):
        body = body.encode()
    head = (f"From: sender@remote.test\r\nTo: someone@{DOMAIN}\r\n"
            f"Subject: {subject}\r\n{extra_headers}\r\n").encode()
    return head + body


def strip_trace(data):
    """The message as delivered: drop the Return-Path: and Received: lines
    the store prepends (Received: is folded over three lines)."""
    assert data.startswith(b"Return-Path: <"), data[:80]
    lines = data.split(b"\r\n")
    assert lines[1].startswith(b"Received: from "), lines[1]
    assert lines[2].startswith(b"\tby "), lines[2]
    assert lines[3].startswith(b"\tfor <"), lines[3]
    return b"\r\n".join(lines[4:])


class Env:
    """A directory with users and a config for popstore shards."""

    def __init__(self, h, shards=("s1", "s2"), tls=False, popstore_extra="",
                 shard_extra=None):
        self.h = h
        self.shards = shards
        self.ds = h.directory_up(shards=shards)
        self.dir = self.ds["dir"]
        self.ports = {}
        for s in shards:
            lmtp, pop3, pop3s, imap, imaps = h.free_ports(5)
            self.ports[s] = {"lmtp": lmtp, "pop3": pop3, "pop3s": pop3s,
                             "imap": imap, "imaps": imaps}
        self.tls = tls
        self.cert = self.key = None
        if tls:
            self.cert, self.key = make_cert(h.tmpdir)
        self.proxy_file = os.path.join(h.tmpdir, "proxy.secret")
        with open(self.proxy_file, "w") as f:
            f.write(PROXY_PASSWORD + "\n")
        os.chmod(self.proxy_file, 0o600)
        self.conf = os.path.join(h.tmpdir, "mailtier.conf")
        self.popstore_extra = popstore_extra
        self.shard_extra = shard_extra or {}
        self.write_conf()
        self.daemons = {}

    def db_home(self, shard):
        return os.path.join(self.h.tmpdir, f"store-{shard}")

    def write_conf(self, path=None, db_homes=None):
        with open(os.path.join(self.dir, "directory.conf")) as f:
            text = f.read()
        text += "\n[global]\nuser =\ngroup =\ndrain_timeout = 5s\n\n"
        if self.tls:
            text += f"[tls]\ncert_file = {self.cert}\nkey_file = {self.key}\n\n"
        text += "[shards]\n"
        for s in self.shards:
            p = self.ports[s]
            text += f"{s} = 127.0.0.1:{p['lmtp']}, 127.0.0.1:{p['pop3']}\n"
        base = {"proxy_password_file": self.proxy_file, "idle_timeout": "30s",
                "max_message_size": "8M"}
        extra = []
        for line in self.popstore_extra.splitlines():
            key = line.split("=", 1)[0].strip()
            if key in base and "=" in line:
                base[key] = line.split("=", 1)[1].strip()
            elif line.strip():
                extra.append(line)
        text += "\n[popstore]\n" + "".join(f"{k} = {v}\n" for k, v in base.items())
        text += "".join(l + "\n" for l in extra)
        for s in self.shards:
            p = self.ports[s]
            home = (db_homes or {}).get(s, self.db_home(s))
            text += (f"\n[popstore.{s}]\ndb_home = {home}\n"
                     f"lmtp_listen = 127.0.0.1:{p['lmtp']}\n"
                     f"pop3_listen = 127.0.0.1:{p['pop3']}\n"
                     f"imap_listen = 127.0.0.1:{p['imap']}\n")
            if self.tls:
                text += f"pop3s_listen = 127.0.0.1:{p['pop3s']}\n"
                text += f"imaps_listen = 127.0.0.1:{p['imaps']}\n"
            text += self.shard_extra.get(s, "")
        with open(path or self.conf, "w") as f:
            f.write(text)
        return path or self.conf

    def add_user(self, address, password, shard="s1", quota=None, status=None):
        args = ["users", "add", address, "--shard", shard]
        if quota is not None:
            args += ["--quota", str(quota)]
        if status is not None:
            args += ["--status", status]
        self.h.ctl(*args, config=self.conf, input=password + "\n")

    def start(self, shard, name=None, conf=None, **kwargs):
        name = name or f"popstore-{shard}"
        argv = [self.h.binary("popstore/mailtier-popstore"), "-c",
                conf or self.conf, "-s", shard, "-F"]
        d = self.h.start(name, argv, **kwargs)
        self.daemons[shard] = d
        return d

    # Clients

    def lmtp(self, shard, source=None, lhlo=None):
        lm = smtplib.LMTP()
        lm.timeout = 30
        if source is not None:
            lm.source_address = (source, 0)
        lm.connect("127.0.0.1", self.ports[shard]["lmtp"])
        if lhlo is not None:
            lm.ehlo(lhlo)
        lm.ehlo_or_helo_if_needed()
        return lm

    def deliver(self, shard, sender, rcpts, msg, lm=None, queue_id=None):
        """One LMTP transaction. Returns (rcpt_replies, data_replies): the
        (code, text) of each RCPT, and after DATA one per accepted RCPT
        (RFC 2033 4.2). DATA is not sent if no RCPT was accepted."""
        own = lm is None
        lm = lm or self.lmtp(shard)
        opts = [f"XQUEUEID={queue_id}"] if queue_id else []
        code, text = lm.mail(sender, opts)
        assert code == 250, (code, text)
        rcpt_replies = [lm.rcpt(r) for r in rcpts]
        accepted = sum(1 for c, _ in rcpt_replies if c == 250)
        data_replies = []
        if accepted:
            data_replies.append(lm.data(msg))
            for _ in range(accepted - 1):
                data_replies.append(lm.getreply())
        else:
            lm.rset()
        if own:
            lm.quit()
        return rcpt_replies, data_replies

    def pop(self, shard, user=None, password=None, tls=None, source=None):
        """A poplib client; logged in with USER/PASS if user is given."""
        port = self.ports[shard]["pop3s" if tls == "implicit" else "pop3"]
        if source is not None:
            sock = socket.create_connection(("127.0.0.1", port), 30,
                                            source_address=(source, 0))
            p = poplib.POP3.__new__(poplib.POP3)
            p.host, p.port, p._tls_established = "127.0.0.1", port, False
            p.sock, p.file = sock, sock.makefile("rb")
            p._debugging = 0
            p.welcome = p._getresp()
        elif tls == "implicit":
            p = poplib.POP3_SSL("127.0.0.1", port, timeout=30,
                                context=insecure_context())
        else:
            p = poplib.POP3("127.0.0.1", port, timeout=30)
        if tls == "stls":
            p.stls(context=insecure_context())
        if user is not None:
            p.user(user)
            p.pass_(password)
        return p

    def imap(self, shard, user=None, password=None, tls=None, source=None):
        """An imaplib client (tls: None, "starttls" or "implicit"); logged
        in with LOGIN if user is given."""
        if tls == "implicit":
            c = imaplib.IMAP4_SSL("127.0.0.1", self.ports[shard]["imaps"],
                                  ssl_context=insecure_context(), timeout=30)
        elif source is not None:
            class Bound(imaplib.IMAP4):
                def _create_socket(self, timeout):
                    return socket.create_connection(
                        (self.host, self.port), timeout,
                        source_address=(source, 0))
            c = Bound("127.0.0.1", self.ports[shard]["imap"], timeout=30)
        else:
            c = imaplib.IMAP4("127.0.0.1", self.ports[shard]["imap"], timeout=30)
        if tls == "starttls":
            c.starttls(ssl_context=insecure_context())
        if user is not None:
            c.login(user, password)
        return c

    def raw(self, shard, proto="pop3", source=None, rcvbuf=None):
        """A plain socket to a listener, for byte-level scenarios. rcvbuf
        (set before connecting, so the TCP window stays that small) makes
        a client that reads slowly look slow to the server too."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(30)
        if rcvbuf is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        if source is not None:
            sock.bind((source, 0))
        sock.connect(("127.0.0.1", self.ports[shard][proto]))
        return sock


def proc_status_kb(pid, field):
    """A /proc/PID/status size field (VmRSS, VmHWM, ...) in KB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_kb(pid):
    return proc_status_kb(pid, "VmRSS")


def instrumented(pid):
    """Under ASan (quarantine) or valgrind, RSS says nothing about us."""
    if os.environ.get("MT_DAEMON_WRAPPER"):
        return True
    with open(f"/proc/{pid}/maps") as f:
        return "libasan" in f.read()


def insecure_context():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


class Lines:
    """Read CRLF lines from a socket (for raw protocol scenarios)."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray()
        self.pos = 0            # start of unread data in buf

    def line(self):
        while True:
            end = self.buf.find(b"\r\n", self.pos)
            if end >= 0:
                line = bytes(self.buf[self.pos:end])
                self.pos = end + 2
                if self.pos > 1 << 20:
                    del self.buf[:self.pos]
                    self.pos = 0
                return line
            data = self.sock.recv(262144)
            if not data:
                rest = bytes(self.buf[self.pos:])
                self.buf, self.pos = bytearray(), 0
                return rest if rest else None
            self.buf += data

    def multiline(self):
        out = []
        while True:
            line = self.line()
            if line is None or line == b".":
                return out
            out.append(line[1:] if line.startswith(b"..") else line)

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.sock.sendall(data)

    def cmd(self, data):
        self.send(data + b"\r\n" if isinstance(data, bytes) else data + "\r\n")
        return self.line()

    def closed(self, timeout=5.0):
        """True if the server closes the connection (EOF) within timeout."""
        self.sock.settimeout(timeout)
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True
                self.buf += data
        except (socket.timeout, TimeoutError):
            return False
        except OSError:
            return True
