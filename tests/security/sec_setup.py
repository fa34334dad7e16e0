"""sec_setup -- what the security tests (tests/security/test-sec-*.py)
share: the integration helpers on sys.path (mta_setup, mmp_setup, lmtpd),
clients bound to a chosen loopback source address (so a test can be a
client outside [mta] mynetworks, or "another" client address for the
per-address limits), SMTP/LMTP/POP3 raw clients, and log checks.

Trust boundary: test code only."""

import base64
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))

import mta_setup  # noqa: E402
import mtharness  # noqa: E402


class Raw(mta_setup.RawSmtp):
    """mta_setup.RawSmtp from a chosen source address (SMTP or LMTP)."""

    def __init__(self, port, source=None, host="127.0.0.1", timeout=15):
        src = (source, 0) if source else None
        self.sock = socket.create_connection((host, port), timeout=timeout,
                                             source_address=src)
        self.buf = b""
        self.greeting = self.reply()


def raw_session(env, port, source=None, login=None):
    """An EHLO'd raw SMTP session (mta_setup.RawSmtp) on one of env's ports:
    implicit TLS on submissions_port; STARTTLS first on submission_port, or
    on any port when login is given; then AUTH PLAIN as login (password
    mta_setup.PASSWORD) when given, or on the submission ports."""
    ctx = env.client_tls_context()
    if port == env.submissions_port:
        r = mta_setup.RawSmtp.__new__(mta_setup.RawSmtp)
        r.sock = ctx.wrap_socket(socket.create_connection(
            ("127.0.0.1", port), timeout=15), server_hostname="localhost")
        r.buf = b""
        r.greeting = r.reply()
    else:
        r = Raw(port, source=source)
    assert r.cmd("EHLO client.test")[0] == 250
    if port == env.submission_port or (login and port != env.submissions_port):
        assert r.cmd("STARTTLS")[0] == 220
        r.sock = ctx.wrap_socket(r.sock, server_hostname="localhost")
        assert r.cmd("EHLO client.test")[0] == 250
    if login is not None:
        auth = base64.b64encode(f"\0{login}\0{mta_setup.PASSWORD}".encode())
        code, text = r.cmd("AUTH PLAIN " + auth.decode())
        assert code == 235, text
    return r


def secrets_forms(user, password):
    """Every spelling of a password a careless log line might show: as is,
    PLAIN's base64 (with and without authzid), LOGIN's base64."""
    forms = {password,
             base64.b64encode(password.encode()).decode(),
             base64.b64encode(f"\0{user}\0{password}".encode()).decode(),
             base64.b64encode(f"{user}\0{user}\0{password}".encode()).decode()}
    # A base64 string cut at any 4-character boundary still shows most of
    # the secret: look for its longest distinctive piece too.
    return {f for f in forms if len(f) >= 6}


def assert_not_logged(texts, secrets):
    """No secret in any of texts (name -> log text)."""
    for name, text in texts.items():
        for secret in secrets:
            assert secret not in text, f"{name} log contains {secret!r}"


def slapd_logs(ds):
    """Text of every file under the directory's dir that looks like a log."""
    out = {}
    for root, _, files in os.walk(ds["dir"]):
        for f in files:
            if f.endswith(".log") or f == "slapd.out":
                try:
                    with open(os.path.join(root, f), errors="replace") as fh:
                        out[os.path.join(root, f)] = fh.read()
                except OSError:
                    pass
    return out


def queue_list(env):
    return env.h.ctl("queue", "list", config=env.conf).stdout


def queue_empty(env):
    return "-- 0 messages" in queue_list(env)


def wait_until(fn, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def run(argv, input=None, timeout=30):
    return subprocess.run(argv, input=input, capture_output=True,
                          timeout=timeout)


def directory_settings(ds):
    """The [directory] keys of `mailtierctl directory up`'s directory.conf."""
    out = {}
    with open(os.path.join(ds["dir"], "directory.conf")) as f:
        for line in f:
            if line.startswith("[") and out:
                break
            k, sep, v = line.partition("=")
            if sep:
                out[k.strip()] = v.strip()
    return out


def set_slow_password(ds, address, password, rounds=500000):
    """Give address a SHA-512 crypt hash with many rounds, so checking its
    password takes the directory a long time (hundreds of ms): a timing
    difference between "unknown user" and "wrong password" then shows
    clearly unless the daemon hides it."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt
    d = directory_settings(ds)
    salt = base64.b64encode(os.urandom(12)).decode().replace("+", ".")[:16]
    hashed = crypt.crypt(password, f"$6$rounds={rounds}${salt}$")
    auth = ["-x", "-H", d["uris"], "-D", d["admin_dn"], "-y",
            d["admin_password_file"]]
    p = subprocess.run(["ldapsearch", *auth, "-LLL", "-o", "ldif-wrap=no",
                        "-b", d["base_dn"],
                        f"(mail={address})", "dn"], capture_output=True,
                       text=True, timeout=30, check=True)
    dn = " ".join(l.strip() for l in p.stdout.splitlines()
                  if l and not l.startswith("#"))
    assert dn.startswith("dn: "), p.stdout
    ldif = (f"{dn}\nchangetype: modify\nreplace: userPassword\n"
            f"userPassword: {{CRYPT}}{hashed}\n")
    subprocess.run(["ldapmodify", *auth], input=ldif, capture_output=True,
                   text=True, timeout=30, check=True)


# TLS checks (test-sec-tls-*.py)

import ssl  # noqa: E402
import warnings  # noqa: E402


def _plain_prelude(sock, starttls):
    """Speak the plaintext part up to the TLS handshake."""
    f = sock.makefile("rb")

    def reply():
        while True:
            line = f.readline()
            if not line:
                raise EOFError("closed before TLS")
            if starttls == "smtp" and line[3:4] == b"-":
                continue
            return line
    reply()                                   # greeting
    if starttls == "smtp":
        sock.sendall(b"EHLO client.test\r\n")
        reply()
        sock.sendall(b"STARTTLS\r\n")
        line = reply()
        assert line.startswith(b"220"), line
    elif starttls == "pop3":
        sock.sendall(b"STLS\r\n")
        line = reply()
        assert line.startswith(b"+OK"), line
    f.close()


def tls_client_context(version=None, legacy=False):
    """A client context pinned to one TLS version (legacy: allow TLS 1.0
    and 1.1 with their old ciphers, as an old or hostile client would)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        if legacy:
            ctx.set_ciphers("ALL:@SECLEVEL=0")
            ctx.minimum_version = ssl.TLSVersion.TLSv1
        if version is not None:
            ctx.minimum_version = version
            ctx.maximum_version = version
    return ctx


def tls_connect(port, starttls=None, version=None, legacy=False,
                host="127.0.0.1", timeout=15):
    """A TLS socket to port (implicit TLS, or after STARTTLS/STLS)."""
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        if starttls:
            _plain_prelude(sock, starttls)
        return tls_client_context(version, legacy).wrap_socket(
            sock, server_hostname="localhost")
    except BaseException:
        sock.close()
        raise


def legacy_versions():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return [ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1]


def legacy_control(h, cert, key):
    """Show that this client really can speak TLS 1.0 and 1.1: against an
    openssl s_server that allows them, both handshakes succeed (so their
    failure against our daemons is the daemons' doing)."""
    port = mtharness.free_port()
    argv = ["openssl", "s_server", "-accept", f"127.0.0.1:{port}", "-cert",
            cert, "-key", key, "-cipher", "ALL:@SECLEVEL=0", "-min_protocol",
            "TLSv1", "-quiet"]
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    h.add_cleanup(lambda: (p.kill(), p.wait()))
    assert mtharness.wait_port(port, proc=p), "openssl s_server did not start"
    for v in legacy_versions():
        s = tls_connect(port, version=v, legacy=True)
        assert s.version() in ("TLSv1", "TLSv1.1"), s.version()
        s.close()
        # s_server -quiet serves one connection after another.
    p.kill()
    p.wait()


def check_tls_versions(port, starttls=None):
    """TLS 1.0 and 1.1 refused, 1.2 and 1.3 accepted, no compression."""
    for v in legacy_versions():
        try:
            s = tls_connect(port, starttls, version=v, legacy=True)
            raise AssertionError(f"port {port}: {s.version()} accepted")
        except (ssl.SSLError, ConnectionResetError, EOFError) as e:
            pass
    for v in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        s = tls_connect(port, starttls, version=v)
        assert s.version() == {ssl.TLSVersion.TLSv1_2: "TLSv1.2",
                               ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[v]
        assert s.compression() is None, s.compression()
        s.close()


def check_renegotiation(port, starttls=None, probe=b"NOOP\r\n",
                        answer=b"250 "):
    """openssl s_client -tls1_2, then "R": the renegotiation must fail
    (no_renegotiation alert or a closed connection), and the probe sent
    after it must not be answered over a renegotiated session."""
    argv = ["openssl", "s_client", "-connect", f"127.0.0.1:{port}",
            "-tls1_2", "-servername", "localhost"]
    if starttls:
        argv += ["-starttls", starttls]
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    try:
        time.sleep(1.5)
        p.stdin.write(b"R\n")
        p.stdin.flush()
        time.sleep(1.5)
        try:
            p.stdin.write(probe)
            p.stdin.flush()
        except BrokenPipeError:
            pass
        time.sleep(1.0)
        try:
            p.stdin.close()
        except BrokenPipeError:
            pass
        p.wait(timeout=15)
        out = p.stdout.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    text = out.decode("utf-8", "replace")
    assert "Compression: NONE" in text, text
    assert "RENEGOTIATING" in text, ("the client did not try", text)
    after = text.split("RENEGOTIATING", 1)[1]
    failed = any(m in after.lower() for m in
                 ("no renegotiation", "alert", "error", "closed"))
    assert failed and answer.decode() not in after, \
        ("renegotiation went through", after)


def cert_der(path):
    with open(path) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def new_cert(directory, cert, key, cn):
    """Overwrite cert/key in place (as an operator renewing them) with a
    new self-signed pair for cn; returns the new certificate's DER."""
    tmp = os.path.join(directory, "renew")
    os.makedirs(tmp, exist_ok=True)
    c, k = mta_setup.make_cert(tmp, cn=cn)
    for src, dst in ((c, cert), (k, key)):
        with open(src, "rb") as f:
            data = f.read()
        with open(dst + ".new", "wb") as f:
            f.write(data)
        os.chmod(dst + ".new", os.stat(dst).st_mode & 0o777)
        os.replace(dst + ".new", dst)
    return cert_der(cert)
