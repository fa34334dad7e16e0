"""mta_setup -- what the MTA's integration tests share: a real slapd with
test users (mtharness.directory_up), LMTP stand-ins for the store shards
(lmtpd.MailSink), a self-signed certificate made with openssl, a config for
mailtier-mta on free loopback ports, and starting/stopping the daemon.

    env = mta_setup.MtaEnv(h, users={"alice@example.test": "s1"})
    mta = env.start_mta()
    with env.smtp() as s: ...              # smtplib.SMTP on the smtp port
    env.shards["s1"].wait_messages(1)

Trust boundary: test code only."""

import os
import smtplib
import socket
import ssl
import subprocess
import time

import lmtpd
import mtharness

DOMAIN = "example.test"
PASSWORD = "secret-pw"


def wait_until(what, cond, timeout=20.0):
    """cond()'s first true value, polled every 0.1 s; AssertionError naming
    what after timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def make_cert(directory, cn="localhost"):
    """A self-signed certificate and key (PEM) in directory."""
    cert = os.path.join(directory, "cert.pem")
    key = os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec",
                    "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2",
                    "-subj", f"/CN={cn}", "-addext",
                    f"subjectAltName=DNS:{cn},IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


class MtaEnv:
    def __init__(self, h, users=None, shards=("s1", "s2"), mta_options=None,
                 tls=True, start_shards=True, popstore=False,
                 popstore_options=None):
        """popstore: the shards are real mailtier-popstore daemons (started
        by start_popstores()) instead of lmtpd.py stand-ins, with
        popstore_options in their [popstore] section."""
        self.popstore_options = popstore_options or {}
        self.h = h
        self.ds = h.directory_up(domain=DOMAIN, shards=shards)
        self.dir = h.tmpdir
        self.shards = {}
        self.popstore = popstore
        self.store_ports = {}
        for name in shards:
            if popstore:
                lmtp, pop3 = mtharness.free_ports(2)
                self.store_ports[name] = {"lmtp": lmtp, "pop3": pop3}
                continue
            self.shards[name] = lmtpd.MailSink(lmtp=True, name=f"shard-{name}")
            if start_shards:
                self.shards[name].start()
            else:
                self.shards[name].port = mtharness.free_port()
        self.cert = self.key = None
        if tls:
            self.cert, self.key = make_cert(self.dir)
        (self.smtp_port, self.submission_port,
         self.submissions_port) = mtharness.free_ports(3)
        self.queue_dir = os.path.join(self.dir, "queue")
        self.options = {
            "hostname": "mx.example.test",
            "local_domains": DOMAIN,
            "mynetworks": "127.0.0.2/32",
            "retry_schedule": "2s 2s 5s",
            "max_queue_lifetime": "1m",
            "command_timeout": "20s",
            "data_timeout": "20s",
            "connection_cache_time": "5s",
            "connect_timeout": "2s",
            "client_timeout": "10s",
        }
        self.options.update(mta_options or {})
        self.conf = os.path.join(self.dir, "mailtier.conf")
        self.write_config()
        for address, shard in (users or {}).items():
            self.add_user(address, shard)
        self.mta = None

    def write_config(self):
        with open(os.path.join(self.ds["dir"], "directory.conf")) as f:
            text = f.read()
        # Only its [directory] section: [mta] is written below.
        text = text.split("\n[mta]")[0]
        lines = ["[global]", "user =", "group =", "log_level = info",
                 "drain_timeout = 5s", "", text, "", "[shards]"]
        for i, (name, sink) in enumerate(self.shards.items()):
            lines.append(f"{name} = 127.0.0.1:{sink.port}, 127.0.0.1:{40000 + i}")
        for name, ports in self.store_ports.items():
            lines.append(f"{name} = 127.0.0.1:{ports['lmtp']}, 127.0.0.1:{ports['pop3']}")
        if self.popstore:
            secret = os.path.join(self.dir, "proxy.secret")
            with open(secret, "w") as f:
                f.write("proxy-secret\n")
            os.chmod(secret, 0o600)
            lines += ["", "[popstore]", f"proxy_password_file = {secret}"]
            lines += [f"{k} = {v}" for k, v in self.popstore_options.items()]
            for name, ports in self.store_ports.items():
                lines += ["", f"[popstore.{name}]",
                          f"db_home = {os.path.join(self.dir, 'store-' + name)}",
                          f"lmtp_listen = 127.0.0.1:{ports['lmtp']}",
                          f"pop3_listen = 127.0.0.1:{ports['pop3']}"]
        if self.cert:
            lines += ["", "[tls]", f"cert_file = {self.cert}",
                      f"key_file = {self.key}"]
        lines += ["", "[mta]",
                  f"smtp_listen = 127.0.0.1:{self.smtp_port}",
                  f"submission_listen = 127.0.0.1:{self.submission_port}",
                  (f"submissions_listen = 127.0.0.1:{self.submissions_port}"
                   if self.cert else "submissions_listen ="),
                  f"queue_dir = {self.queue_dir}"]
        lines += [f"{k} = {v}" for k, v in self.options.items()]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def add_user(self, address, shard, password=PASSWORD, extra=()):
        self.h.ctl("users", "add", address, "--shard", shard, *extra,
                   config=self.conf, input=password + "\n")

    def start_popstores(self):
        """Start a mailtier-popstore per shard (skips the test if it is not
        built: it is another tier's daemon)."""
        try:
            binary = mtharness.binary("popstore/mailtier-popstore")
        except mtharness.HarnessError:
            raise mtharness.Skip("mailtier-popstore is not built")
        return {name: self.h.start(f"popstore-{name}",
                                   [binary, "-c", self.conf, "-s", name, "-F"])
                for name in self.store_ports}

    def pop(self, shard, user, password=PASSWORD):
        import poplib
        p = poplib.POP3("127.0.0.1", self.store_ports[shard]["pop3"], timeout=15)
        p.user(user)
        p.pass_(password)
        return p

    def start_mta(self, name="mta", **kwargs):
        argv = [mtharness.binary("mta/mailtier-mta"), "-f", "-c", self.conf]
        self.mta = self.h.start(name, argv, **kwargs)
        return self.mta

    def smtp(self, port=None, host="127.0.0.1", timeout=15):
        s = smtplib.SMTP(host, port or self.smtp_port, timeout=timeout)
        return s

    def client_tls_context(self):
        ctx = ssl.create_default_context(cafile=self.cert)
        ctx.check_hostname = False
        return ctx

    def raw(self, port=None, host="127.0.0.1"):
        """A RawSmtp on the smtp port, greeting read."""
        return RawSmtp(host, port or self.smtp_port)


class RawSmtp:
    """Byte-level SMTP for tests that must send what smtplib will not."""

    def __init__(self, host, port, timeout=15):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""
        self.greeting = self.reply()

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.sock.sendall(data)

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError(f"connection closed; pending {self.buf!r}")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode("utf-8", "replace")

    def reply(self):
        """(code, full text) of one possibly multi-line reply."""
        lines = []
        while True:
            line = self.line()
            lines.append(line)
            if len(line) < 4 or line[3] != "-":
                return int(line[:3]), "\n".join(lines)

    def cmd(self, text):
        self.send(text + "\r\n")
        return self.reply()

    def closed(self, timeout=5):
        """True if the server closes the connection (after any data)."""
        self.sock.settimeout(timeout)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
                self.buf += chunk
        except (socket.timeout, ConnectionResetError):
            return False

    def close(self):
        self.sock.close()


def message(subject="test", body="Hello.\r\n", sender="sender@remote.test",
            to="alice@example.test", extra_headers=""):
    return (f"From: <{sender}>\r\nTo: <{to}>\r\nSubject: {subject}\r\n"
            f"Message-ID: <{time.time_ns()}@test>\r\n{extra_headers}\r\n{body}")


class DnsStub:
    """A tiny authoritative DNS server on UDP 127.0.0.1 for MX tests:
    records = {("mx.test", "MX"): [(10, "mail.mx.test")],
               ("mail.mx.test", "A"): ["127.0.0.7"]}.
    A name with no record of the asked type answers NODATA; an unknown
    name NXDOMAIN."""

    TYPES = {1: "A", 15: "MX", 28: "AAAA"}

    def __init__(self, records):
        import threading
        self.records = {(n.lower().rstrip("."), t): v for (n, t), v in records.items()}
        self.queries = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @staticmethod
    def _name(text):
        out = b""
        for label in text.rstrip(".").split("."):
            out += bytes([len(label)]) + label.encode()
        return out + b"\0"

    def _serve(self):
        import struct
        while True:
            try:
                data, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            try:
                qid, flags, qd = struct.unpack(">HHH", data[:6])
                pos, labels = 12, []
                while data[pos]:
                    n = data[pos]
                    labels.append(data[pos + 1:pos + 1 + n].decode())
                    pos += n + 1
                qtype, qclass = struct.unpack(">HH", data[pos + 1:pos + 5])
                question = data[12:pos + 5]
            except (struct.error, IndexError, UnicodeDecodeError):
                continue
            name = ".".join(labels).lower()
            kind = self.TYPES.get(qtype, str(qtype))
            self.queries.append((name, kind))
            known = any(n == name for n, _ in self.records)
            answers = self.records.get((name, kind), [])
            rcode = 0 if known else 3
            body = b""
            for rec in answers:
                if kind == "MX":
                    rdata = struct.pack(">H", rec[0]) + self._name(rec[1])
                elif kind == "A":
                    rdata = socket.inet_aton(rec)
                else:
                    continue
                body += struct.pack(">HHHIH", 0xC00C, qtype, 1, 60, len(rdata)) + rdata
            header = struct.pack(">HHHHHH", qid, 0x8580 | rcode, 1,
                                 len(answers), 0, 0)
            self.sock.sendto(header + question + body, peer)

    def close(self):
        self.sock.close()
