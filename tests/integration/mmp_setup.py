"""mmp_setup -- a small mail cluster for the MMP's tests and bench/mmp:
a real slapd (`mailtierctl directory up`), store shards, and
mailtier-mmp in front of them, all on loopback with free ports.

Shards are the real mailtier-popstore when it is built ($MT_BUILDDIR/
popstore/mailtier-popstore), filled over LMTP; otherwise, or when a test
asks for a fault the real store never shows (a shard that accepts
connections but never greets), tests/integration/popbackend.py, the
stand-in that implements the same MMP <-> store contract.

    import mmp_setup
    c = mmp_setup.Cluster(h, users={"alice@example.test": ("pw", "s1")},
                          mail={"alice@example.test": ["Subject: x\\n\\nhi\\n"]})
    c.start_mmp(conn_limit_per_client=5)
    p = c.pop3()          # poplib.POP3 on the STLS port (not yet STLS'd)

MT_POPSTORE names another mailtier-popstore binary (e.g. a build without
sanitizers under an ASan MMP); MT_MMP_STANDIN=1 uses the stand-in shards.
MT_MMP_WRAPPER runs only the MMP under a tool, e.g.
MT_MMP_WRAPPER="valgrind -q --error-exitcode=99 --leak-check=full".

Trust boundary: test code only.
"""

import imaplib
import os
import poplib
import socket
import ssl
import subprocess
import sys
import time

import mtharness

HERE = os.path.dirname(os.path.abspath(__file__))
DOMAIN = "example.test"
# 150 characters: the MMP's AUTH PLAIN to a store fits in one 255-octet
# line (RFC 5034 section 4) for addresses up to 25 characters; longer ones
# take the "AUTH PLAIN" / "+ " / response path. Tests use both.
PROXY_PASSWORD = "proxy-secret-for-tests-" + "p" * 127


def popstore_binary():
    """The real store daemon, or None if this build does not have it."""
    if os.environ.get("MT_MMP_STANDIN") == "1":
        return None
    if os.environ.get("MT_POPSTORE"):
        return os.environ["MT_POPSTORE"]
    try:
        return mtharness.binary("popstore/mailtier-popstore")
    except mtharness.HarnessError:
        return None


class _FromSource:
    """A client class connecting from a chosen local address (127.0.0.x),
    so a test can be "another client" for the per-address limits; with
    tls, wrapped in the class's context (poplib's self.context, imaplib's
    self.ssl_context)."""

    def _create_socket(self, timeout):
        src = (self._source, 0) if self._source else None
        sock = socket.create_connection((self.host, self.port), timeout,
                                        source_address=src)
        ctx = self.tls_context()
        return ctx.wrap_socket(sock, server_hostname=self.host) if ctx else sock


class SourcePOP3(_FromSource, poplib.POP3):
    def __init__(self, host, port, source=None, timeout=10):
        self._source = source
        super().__init__(host, port, timeout=timeout)

    def tls_context(self):
        return None


class SourcePOP3_SSL(_FromSource, poplib.POP3_SSL):
    def __init__(self, host, port, source=None, context=None, timeout=10):
        self._source = source
        super().__init__(host, port, context=context, timeout=timeout)

    def tls_context(self):
        return self.context


class SourceIMAP4(_FromSource, imaplib.IMAP4):
    def __init__(self, host, port, source=None, timeout=10):
        self._source = source
        super().__init__(host, port, timeout=timeout)

    def tls_context(self):
        return None


class SourceIMAP4_SSL(_FromSource, imaplib.IMAP4_SSL):
    def __init__(self, host, port, source=None, context=None, timeout=10):
        self._source = source
        super().__init__(host, port, ssl_context=context, timeout=timeout)

    def tls_context(self):
        return self.ssl_context


class Cluster:
    """slapd + shards + (after start_mmp) the MMP."""

    def __init__(self, h, users, mail=None, shards=("s1", "s2"),
                 silent_shards=(), backend=None, popstore_settings=None,
                 cert_key="rsa:2048"):
        self.h = h
        self.cert_key = cert_key
        self.popstore_settings = popstore_settings or {}
        self.ds = h.directory_up(shards=tuple(shards) + tuple(silent_shards))
        self.dir = self.ds["dir"]
        self.users = users
        self.mail = mail or {}
        self.mmp = None
        self.mmp_count = 0
        self.popstore = popstore_binary() if backend is None else (
            popstore_binary() if backend == "popstore" else None)
        if backend == "popstore" and self.popstore is None:
            raise mtharness.Skip("mailtier-popstore is not built")
        names = list(shards) + list(silent_shards)
        ports = h.free_ports(3 * len(names) + 4)
        self.pop3_port = {n: ports[3 * i] for i, n in enumerate(names)}
        self.lmtp_port = {n: ports[3 * i + 1] for i, n in enumerate(names)}
        self.imap_port = {n: ports[3 * i + 2] for i, n in enumerate(names)}
        self.mmp_port, self.mmps_port = ports[-4], ports[-3]
        self.mmp_imap_port, self.mmp_imaps_port = ports[-2], ports[-1]
        self.shard_names = list(shards)
        self.silent = list(silent_shards)
        self.secret = os.path.join(self.dir, "proxy.secret")
        with open(self.secret, "w") as f:
            f.write(PROXY_PASSWORD + "\n")
        self.cert, self.key = self._make_cert()
        self.ctx = ssl.create_default_context(cafile=self.cert)
        self.conf = self.write_conf("base.conf", {})
        for address, (password, shard, *rest) in users.items():
            args = ["users", "add", address, "--shard", shard]
            if rest:
                args += ["--status", rest[0]]
            h.ctl(*args, config=self.conf, input=password + "\n")
        self.shard_daemons = {}
        for name in self.shard_names:
            self.start_shard(name)
        for name in self.silent:
            self.start_shard(name, mode="silent")
        if self.popstore:
            self._deliver()

    # Files

    def _make_cert(self):
        cert = os.path.join(self.dir, "cert.pem")
        key = os.path.join(self.dir, "key.pem")
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", self.cert_key, "-nodes",
             "-keyout", key, "-out", cert, "-days", "2", "-subj",
             "/CN=localhost", "-addext",
             "subjectAltName=DNS:localhost,IP:127.0.0.1"],
            check=True, capture_output=True, timeout=60)
        return cert, key

    def write_conf(self, name, mmp_overrides, global_overrides=None):
        """A full mailtier.conf: [directory] from `directory up`, [shards],
        [tls], [mmp] (defaults for tests, then the overrides), [popstore]."""
        with open(os.path.join(self.dir, "directory.conf")) as f:
            text = f.read()
        g = {"user": "", "group": "", "log_level": "info",
             "drain_timeout": "5s"}
        g.update(global_overrides or {})
        text += "\n[global]\n" + "".join(f"{k} = {v}\n" for k, v in g.items())
        text += "\n[shards]\n" + "".join(
            f"{n} = 127.0.0.1:{self.lmtp_port[n]}, 127.0.0.1:{self.pop3_port[n]}, "
            f"127.0.0.1:{self.imap_port[n]}\n"
            for n in self.pop3_port)
        text += f"\n[tls]\ncert_file = {self.cert}\nkey_file = {self.key}\n"
        m = {"pop3_listen": f"127.0.0.1:{self.mmp_port}",
             "pop3s_listen": f"127.0.0.1:{self.mmps_port}",
             "imap_listen": f"127.0.0.1:{self.mmp_imap_port}",
             "imaps_listen": f"127.0.0.1:{self.mmp_imaps_port}",
             "threads": 2, "proxy_password_file": self.secret,
             "auth_fail_delay": "300ms", "auth_fail_limit": 4,
             "backend_connect_timeout": "1s", "shard_retry_interval": "1s",
             "login_timeout": "30s", "stats_interval": "0"}
        m.update(mmp_overrides)
        text += "\n[mmp]\n" + "".join(f"{k} = {v}\n" for k, v in m.items())
        ps = {"proxy_password_file": self.secret, "db_cache_size": "8M"}
        ps.update(self.popstore_settings)
        text += "\n[popstore]\n" + "".join(f"{k} = {v}\n" for k, v in ps.items())
        for n in self.pop3_port:
            text += (f"\n[popstore.{n}]\ndb_home = {self.dir}/store-{n}\n"
                     f"lmtp_listen = 127.0.0.1:{self.lmtp_port[n]}\n"
                     f"pop3_listen = 127.0.0.1:{self.pop3_port[n]}\n"
                     f"imap_listen = 127.0.0.1:{self.imap_port[n]}\n")
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    # Shards

    def start_shard(self, name, mode="normal"):
        port = self.pop3_port[name]
        self.starts = getattr(self, "starts", 0) + 1
        tag = f"{name}-{self.starts}"
        if self.popstore and mode == "normal":
            os.makedirs(os.path.join(self.dir, f"store-{name}"), exist_ok=True)
            d = self.h.start(f"popstore-{tag}", [self.popstore, "-c", self.conf,
                                                  "-s", name, "-F"])
        else:
            boxes = os.path.join(self.dir, f"mail-{name}.json")
            import json
            with open(boxes, "w") as f:
                json.dump({a: m for a, m in self.mail.items()
                           if self.users[a][1] == name}, f)
            d = self.h.start(f"standin-{tag}",
                             [sys.executable, os.path.join(HERE, "popbackend.py"),
                              "--listen", f"127.0.0.1:{port}", "--name", name,
                              "--proxy-password-file", self.secret,
                              "--mailboxes", boxes, "--mode", mode],
                             notify=False, ready_port=port)
        self.shard_daemons[name] = d
        return d

    def stop_shard(self, name):
        self.shard_daemons.pop(name).stop(expect=None)

    def _deliver(self):
        """Fill the real stores over LMTP (RFC 2033)."""
        for address, messages in self.mail.items():
            shard = self.users[address][1]
            for text in messages:
                lmtp_deliver(self.lmtp_port[shard], [address], text.encode())

    # The MMP

    def start_mmp(self, name="mmp", global_overrides=None, **overrides):
        if self.mmp is not None:
            self.mmp.stop()
        self.mmp_count += 1
        conf = self.write_conf(f"mmp-{self.mmp_count}.conf", overrides,
                               global_overrides)
        # MT_MMP_WRAPPER: run only the MMP under a tool (valgrind).
        wrapper = os.environ.get("MT_MMP_WRAPPER", "").split()
        self.mmp = self.h.start(f"{name}-{self.mmp_count}",
                                wrapper + [mtharness.binary("mmp/mailtier-mmp"),
                                           "-c", conf, "-f"], ready_timeout=60)
        return self.mmp

    def imap(self, source=None, timeout=10):
        """imaplib.IMAP4 on the MMP's STARTTLS port (not yet STARTTLS'd)."""
        return SourceIMAP4("127.0.0.1", self.mmp_imap_port, source, timeout)

    def imaps(self, source=None, timeout=10):
        return SourceIMAP4_SSL("localhost", self.mmp_imaps_port, source,
                               context=self.ctx, timeout=timeout)

    def imap_login(self, address, password=None, source=None):
        m = self.imap(source)
        m.starttls(ssl_context=self.ctx)
        m.login(address, password if password is not None else self.users[address][0])
        return m

    def pop3(self, source=None, timeout=10):
        return SourcePOP3("127.0.0.1", self.mmp_port, source, timeout)

    def pop3s(self, source=None, timeout=10):
        return SourcePOP3_SSL("localhost", self.mmps_port, source,
                              context=self.ctx, timeout=timeout)

    def pop3_tls(self, source=None, timeout=10):
        p = self.pop3(source, timeout)
        p.stls(context=self.ctx)
        return p

    def login(self, address, password=None, source=None):
        p = self.pop3_tls(source)
        p.user(address)
        p.pass_(password if password is not None else self.users[address][0])
        return p

    def session_lines(self):
        """The MMP's session end lines, as dicts of their key=value fields."""
        out = []
        for line in self.mmp.log().splitlines():
            if " session end " not in line:
                continue
            fields = {}
            for word in line.split(" session end ", 1)[1].split():
                k, _, v = word.partition("=")
                fields[k] = v
            out.append(fields)
        return out

    def wait_session(self, timeout=5.0, **want):
        """The last session end line whose fields include want (e.g.
        user="bob@example.test"); waits for it, since a session is logged
        when both sides have closed, a moment after the client's QUIT."""
        deadline = time.monotonic() + timeout
        while True:
            found = [l for l in self.session_lines()
                     if all(l.get(k, "").startswith(v) for k, v in want.items())]
            if found:
                return found[-1]
            if time.monotonic() > deadline:
                raise mtharness.HarnessError(f"no session end line with {want}")
            time.sleep(0.05)


def lmtp_deliver(port, recipients, message, sender="sender@remote.test"):
    """One LMTP transaction (RFC 2033) to many recipients, pipelined (LMTP
    servers must support PIPELINING); checks the per-recipient replies
    after DATA. smtplib.LMTP cannot: it reads one reply after DATA."""
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    f = s.makefile("rb")

    def reply():
        lines = []
        while True:
            line = f.readline()
            if not line:
                raise RuntimeError("LMTP: connection closed")
            lines.append(line)
            if line[3:4] != b"-":
                return lines[-1]
    try:
        reply()
        s.sendall(b"LHLO bench\r\n")
        reply()
        cmds = [f"MAIL FROM:<{sender}>\r\n"] + \
            [f"RCPT TO:<{r}>\r\n" for r in recipients] + ["DATA\r\n"]
        s.sendall("".join(cmds).encode())
        for _ in range(len(cmds)):
            r = reply()
            if r[:1] not in (b"2", b"3"):
                raise RuntimeError(f"LMTP: {r!r}")
        body = message.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        body = b"".join((b"." + l if l.startswith(b".") else l)
                        for l in body.splitlines(True))
        if not body.endswith(b"\r\n"):
            body += b"\r\n"
        s.sendall(body + b".\r\n")
        for _ in recipients:
            r = reply()
            if not r.startswith(b"250"):
                raise RuntimeError(f"LMTP delivery: {r!r}")
        s.sendall(b"QUIT\r\n")
        reply()
    finally:
        f.close()
        s.close()


def raw(port, host="127.0.0.1", source=None, timeout=10):
    src = (source, 0) if source else None
    return socket.create_connection((host, port), timeout, source_address=src)


def read_line(sock):
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = sock.recv(1)
        if not chunk:
            break
        data += chunk
    return data.decode("utf-8", "replace").rstrip("\r\n")


def timed(fn, *args, **kwargs):
    """(result or exception, seconds)."""
    t0 = time.monotonic()
    try:
        r = fn(*args, **kwargs)
    except Exception as e:  # the answer under test may be an error
        r = e
    return r, time.monotonic() - t0
