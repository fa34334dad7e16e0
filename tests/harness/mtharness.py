"""mtharness -- integration-test harness for mailtier daemons (stdlib only).

It runs daemons the way systemd does for a Type=notify unit: each daemon gets
$NOTIFY_SOCKET pointing at an AF_UNIX datagram socket the harness reads (the
real sd_notify protocol, with the sender's pid checked through
SCM_CREDENTIALS as NotifyAccess=main does), and start-up waits for READY=1.
A daemon built without libsystemd can be waited for on a TCP port instead.
Each daemon's stdout and stderr go to a log file; when a test fails every
log is printed.

Typical test:

    import mtharness

    def test(h):
        port = h.free_port()
        d = h.start("echod", [h.binary("tests/harness/mt-echod"),
                              "-l", f"127.0.0.1:{port}"])
        with h.connect(port) as s:
            ...
        d.stop()            # SIGTERM, must exit 0 within the bound

    if __name__ == "__main__":
        mtharness.main(test)

Binaries are found under $MT_BUILDDIR (the build tree's top directory), which
the build system sets when it runs the tests. Exit codes follow automake:
0 pass, 1 fail, 77 skip (raise mtharness.Skip("why") for a real reason).
Set MT_KEEP_TMP=1 to keep the temporary directory with the logs, MT_VERBOSE=1
for progress lines, and MT_DAEMON_WRAPPER to run every daemon under a tool,
e.g. MT_DAEMON_WRAPPER="valgrind -q --error-exitcode=99 --leak-check=full"
(the tool must exec in the same process, so sd_notify's pid still matches).

Trust boundary: test code only; the daemons under test are not trusted to
behave, so every wait has a bound.
"""

import array
import os
import queue
import random
import re
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

EXIT_SKIP = 77
DEFAULT_READY_TIMEOUT = 20.0
DEFAULT_STOP_TIMEOUT = 15.0

_UCRED = array.array("i", [0, 0, 0]).itemsize * 3


class Skip(Exception):
    """Raise to report the test as skipped (exit 77); give the reason."""


class HarnessError(AssertionError):
    """A daemon did not behave: did not start, did not stop, bad status."""


# Ports and connections

def free_port(host="127.0.0.1"):
    """A TCP port on host that is free now (bind to port 0, then release)."""
    return free_ports(1, host)[0]


def _below_ephemeral():
    """The first port of the kernel's ephemeral range (outgoing
    connections' local ports come from there)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


# Ports this process has handed out: a later call never returns one again
# (two calls of one test, each picking a port still free because no daemon
# had bound the first call's yet, collided: "Address already in use").
_handed_out = set()


def free_ports(count, host="127.0.0.1"):
    """count distinct free ports (all held until all are chosen), picked at
    random below the kernel's ephemeral range: a port the kernel handed out
    by bind(0) could be taken as the local port of another test's outgoing
    connection in the moment between its release here and the daemon's
    bind (seen as "Address already in use" in CI). None of them was
    returned before by this process."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    low, high = 10000, _below_ephemeral()
    rng = random.Random()
    socks = []
    try:
        tries = 0
        while len(socks) < count:
            tries += 1
            s = socket.socket(family, socket.SOCK_STREAM)
            try:
                if high - low > 1000 and tries < 20 * count + 200:
                    s.bind((host, rng.randrange(low, high)))
                else:
                    s.bind((host, 0))
            except OSError:
                s.close()
                continue
            if s.getsockname()[1] in _handed_out:
                s.close()
                continue
            socks.append(s)
        ports = [s.getsockname()[1] for s in socks]
        _handed_out.update(ports)
        return ports
    finally:
        for s in socks:
            s.close()


def read_env(path):
    """The KEY=VALUE lines of a file such as `cluster up`'s endpoints.env."""
    env = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            k, _, v = line.partition("=")
            env[k] = v
    return env


def free_port_block(count, host="127.0.0.1"):
    """A base port P with P..P+count-1 free on host, below the kernel's
    ephemeral range (outgoing connections take ports there and could take
    one of the block while a cluster starts): `mailtierctl cluster up
    --base-port P`."""
    low = 10000
    low_eph = _below_ephemeral()
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(low, max(low + 1, low_eph - count))
        if any(p in _handed_out for p in range(base, base + count)):
            continue
        socks = []
        try:
            for p in range(base, base + count):
                s = socket.socket()
                s.bind((host, p))
                socks.append(s)
            _handed_out.update(range(base, base + count))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise HarnessError(f"no block of {count} free ports on {host}")


def wait_port(port, host="127.0.0.1", timeout=10.0, proc=None):
    """Wait until a TCP connect to host:port succeeds. False on timeout or
    if proc (a Popen) exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            socket.create_connection((host, port), timeout=1.0).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def have_ipv6():
    """True if [::1] can be bound here (no IPv6 in some containers)."""
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


# Binaries

def builddir():
    """The build tree: $MT_BUILDDIR, else the source tree this file is in."""
    env = os.environ.get("MT_BUILDDIR")
    if env:
        return os.path.abspath(env)
    return os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def loadgen_level_sums(results, level=0):
    """Sums over a mailtier-load level's warm-up and measured phases (its
    results.json as a dict): ({function: {"attempts", "pass"}},
    {session kind: {"attempted", "failed"}}, {counter: n},
    {error kind: n})."""
    lv = results["levels"][level]
    fns, kinds, counters, errors = {}, {}, {}, {}
    for phase in ("warmup", "measure"):
        st = lv[phase]
        for key, f in st["functions"].items():
            a = fns.setdefault(key, {"attempts": 0, "pass": 0})
            a["attempts"] += f["attempts"]
            a["pass"] += f["pass"]
        for kind, k in st["sessions"].items():
            a = kinds.setdefault(kind, {"attempted": 0, "failed": 0})
            a["attempted"] += k["attempted"]
            a["failed"] += k["failed"]
        for key, v in st["counters"].items():
            counters[key] = counters.get(key, 0) + v
        for key, v in st["errors"].items():
            errors[key] = errors.get(key, 0) + v
    return fns, kinds, counters, errors


def binary(relpath):
    """Path of a built program, e.g. binary("tests/harness/mt-echod").
    Raises HarnessError if it is not there: a missing binary is a broken
    build, not a reason to skip."""
    path = os.path.join(builddir(), relpath)
    if os.access(path, os.X_OK):
        return path
    # Some builds put helper programs at the top of the build tree.
    flat = os.path.join(builddir(), os.path.basename(relpath))
    if os.access(flat, os.X_OK):
        return flat
    raise HarnessError(f"{relpath} not found under {builddir()} "
                       "(build it, or set MT_BUILDDIR to the build tree)")


# The service manager's side of sd_notify(3)

class NotifySocket:
    """An AF_UNIX datagram socket receiving sd_notify messages. A thread
    reads it all the time, as a service manager does: a unix datagram
    socket queues only ~10 messages, and a daemon whose sd_notify() finds
    the queue full blocks in it."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        # Ask the kernel for the sender's credentials, as systemd does.
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.queue = queue.Queue()
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True,
                                       name=f"notify:{path}")
        self.reader.start()

    def _read(self):
        while not self.closed.is_set():
            try:
                ready, _, _ = select.select([self.sock], [], [], 0.2)
            except (OSError, ValueError):
                return      # closed under us
            if ready:
                with self.lock:
                    if not self._take():
                        return

    def _take(self):
        """Move one waiting datagram (if any) to the queue; False once the
        socket is closed. Called with self.lock held."""
        try:
            data, ancdata, _, _ = self.sock.recvmsg(
                4096, socket.CMSG_SPACE(_UCRED), socket.MSG_DONTWAIT)
        except BlockingIOError:
            return True
        except (OSError, ValueError):
            return False
        pid = 0
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = array.array("i", payload[:_UCRED])[0]
        self.queue.put((pid, data.decode("utf-8", "replace")))
        return True

    def _settle(self):
        """Everything sent so far is in the queue (not still in the socket
        or between the reader's recv and put)."""
        with self.lock:
            while True:
                try:
                    ready, _, _ = select.select([self.sock], [], [], 0)
                except (OSError, ValueError):
                    return
                if not ready or not self._take():
                    return

    def receive(self, timeout):
        """One message as (pid, text), or None after timeout seconds
        (timeout 0: whatever the daemon has sent by now)."""
        try:
            if timeout > 0:
                return self.queue.get(timeout=timeout)
            self._settle()
            return self.queue.get_nowait()
        except queue.Empty:
            return None

    def close(self):
        self.closed.set()
        self.reader.join(timeout=2)
        self.sock.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class Daemon:
    """One daemon process under the harness. Use Harness.start()."""

    def __init__(self, harness, name, argv, env=None, notify=True,
                 watchdog_usec=None):
        self.harness = harness
        self.name = name
        self.argv = [str(a) for a in argv]
        wrapper = os.environ.get("MT_DAEMON_WRAPPER")
        if wrapper:
            self.argv = shlex.split(wrapper) + self.argv
        self.notify = notify
        self.log_path = os.path.join(harness.tmpdir, f"{name}.log")
        self.messages = []      # (monotonic time, text) from the daemon
        self.foreign = []       # messages from other pids, ignored
        self.proc = None
        self.returncode = None
        self._notify = None
        self._env = dict(os.environ)
        # Never talk to the real service manager of the test runner.
        for key in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID",
                    "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"):
            self._env.pop(key, None)
        if env:
            self._env.update({k: str(v) for k, v in env.items()})
        if watchdog_usec is not None:
            # No WATCHDOG_PID: sd_watchdog_enabled() then applies it to us.
            self._env["WATCHDOG_USEC"] = str(int(watchdog_usec))

    # Start and readiness

    def start(self, ready_timeout=DEFAULT_READY_TIMEOUT, ready_port=None,
              ready_host="127.0.0.1"):
        """Start the process and wait until it is ready: READY=1 over
        sd_notify, or (notify=False) a TCP connect to ready_port."""
        if self.notify:
            self._notify = NotifySocket(
                os.path.join(self.harness.tmpdir, f"{self.name}.notify"))
            self._env["NOTIFY_SOCKET"] = self._notify.path
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv, env=self._env, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.started_at = time.monotonic()
        if self.notify:
            self.wait_notify("READY=1", ready_timeout)
        elif ready_port is not None:
            if not wait_port(ready_port, ready_host, ready_timeout, self.proc):
                self._fail(f"port {ready_port} did not answer within "
                                 f"{ready_timeout:.0f} s")
        self.harness.note(f"{self.name}: started pid {self.proc.pid}")
        return self

    def _fail(self, why):
        status = self.proc.poll()
        if status is not None:
            why += f" (it exited with status {status})"
        raise HarnessError(f"{self.name} ({' '.join(self.argv)}): {why}")

    @property
    def pid(self):
        return self.proc.pid

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    # sd_notify messages

    def _pump(self, timeout):
        """Receive what arrives within timeout; True if anything did."""
        got = self._notify.receive(timeout)
        if got is None:
            return False
        pid, text = got
        if pid != self.proc.pid:
            self.foreign.append((pid, text))    # NotifyAccess=main
        else:
            self.messages.append((time.monotonic(), text))
        return True

    def wait_notify(self, assignment, timeout=10.0, since=0):
        """Wait for a message containing the line assignment ("READY=1", or
        "STATUS=" to match any status) among messages[since:]. Returns its
        index in self.messages. The daemon exiting first is an error."""
        if self._notify is None:
            raise HarnessError(f"{self.name} was started without sd_notify")
        deadline = time.monotonic() + timeout
        checked = since
        while True:
            for i in range(checked, len(self.messages)):
                for line in self.messages[i][1].split("\n"):
                    if line == assignment or (assignment.endswith("=") and
                                              line.startswith(assignment)):
                        return i
            checked = len(self.messages)
            left = deadline - time.monotonic()
            if left <= 0:
                self._fail(f"no {assignment} within {timeout:.1f} s")
            if (not self._pump(min(left, 0.1)) and
                    self.proc.poll() is not None and not self._pump(0)):
                self._fail(f"no {assignment}")

    def drain_notify(self, seconds=0.0):
        """Collect messages for up to seconds; return all received so far."""
        deadline = time.monotonic() + seconds
        while self._pump(max(deadline - time.monotonic(), 0)):
            pass
        return [text for _, text in self.messages]

    def notify_values(self, key):
        """Every value sent for key, in order (e.g. all STATUS= texts)."""
        self.drain_notify(0)
        out = []
        for _, text in self.messages:
            for line in text.split("\n"):
                if line.startswith(key + "="):
                    out.append(line[len(key) + 1:])
        return out

    # Signals and stop

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def reload(self, timeout=10.0):
        """SIGHUP, then wait for RELOADING=1 followed by READY=1 (without
        sd_notify: just send the signal)."""
        since = len(self.messages)
        self.send_signal(signal.SIGHUP)
        if self._notify is None:
            return
        i = self.wait_notify("RELOADING=1", timeout, since)
        self.wait_notify("READY=1", timeout, i + 1)

    def stop(self, timeout=DEFAULT_STOP_TIMEOUT, expect=0, sig=signal.SIGTERM):
        """Send sig and wait up to timeout seconds for the exit; then
        SIGKILL. Raises HarnessError unless it exited by itself with status
        expect (None: any). Returns the seconds it took."""
        if self.proc.poll() is None:
            start = time.monotonic()
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self._close()
                raise HarnessError(f"{self.name} did not exit within "
                                   f"{timeout:.1f} s of {sig.name}; killed")
            took = time.monotonic() - start
        else:
            took = 0.0
        self._close()
        self.returncode = self.proc.returncode
        if expect is not None and self.returncode != expect:
            how = (f"signal {-self.returncode}" if self.returncode < 0
                   else f"status {self.returncode}")
            raise HarnessError(f"{self.name} exited with {how}, "
                               f"expected status {expect}")
        self.harness.note(f"{self.name}: exited {self.returncode} "
                          f"after {took:.2f} s")
        return took

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close()

    def _close(self):
        if self._notify is not None:
            while self._pump(0):
                pass
            self._notify.close()
            self._notify = None

    # Logs

    def log(self):
        try:
            with open(self.log_path, "r", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def wait_log(self, pattern, timeout=10.0):
        """Wait until the regex pattern matches a line of the log."""
        regex = re.compile(pattern, re.M)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = regex.search(self.log())
            if m:
                return m
            time.sleep(0.05)
        raise HarnessError(f"{self.name}: no log line matching "
                           f"{pattern!r} within {timeout:.1f} s")


class Harness:
    """Owns a temporary directory and the daemons of one test. As a context
    manager it prints every daemon's log if the block raises, and always
    stops what is still running."""

    def __init__(self, verbose=None):
        self.tmpdir = tempfile.mkdtemp(prefix="mt-harness-")
        self.daemons = []
        self.cleanups = []
        self.verbose = (os.environ.get("MT_VERBOSE") == "1"
                        if verbose is None else verbose)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        failed = exc_type is not None and not issubclass(exc_type, Skip)
        for d in self.daemons:
            d.kill()
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as e:  # keep cleaning up; report it
                print(f"harness: cleanup failed: {e}", file=sys.stderr)
        if failed:
            self.dump_logs()
        if failed or os.environ.get("MT_KEEP_TMP") == "1":
            print(f"harness: files kept in {self.tmpdir}", file=sys.stderr)
        else:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
        return False

    def note(self, text):
        if self.verbose:
            print(f"harness: {text}", file=sys.stderr)

    def start(self, name, argv, **kwargs):
        """Start a daemon; keyword arguments go to Daemon() (env, notify,
        watchdog_usec) and Daemon.start() (ready_timeout, ready_port)."""
        start_keys = ("ready_timeout", "ready_port", "ready_host")
        start_args = {k: kwargs.pop(k) for k in start_keys if k in kwargs}
        if any(d.name == name for d in self.daemons):
            raise ValueError(f"daemon name {name} already used")
        d = Daemon(self, name, argv, **kwargs)
        self.daemons.append(d)
        return d.start(**start_args)

    def dump_logs(self, out=sys.stderr):
        for d in self.daemons:
            print(f"----- {d.name}: {' '.join(d.argv)} -----", file=out)
            print(d.log().rstrip("\n") or "(empty log)", file=out)
            if d.messages:
                print(f"----- {d.name}: sd_notify messages -----", file=out)
                for t, text in d.messages:
                    print(f"+{t - d.started_at:7.3f}s {text!r}", file=out)
        print("----- end of daemon logs -----", file=out)

    def add_cleanup(self, fn):
        """Call fn() when the test ends, pass or fail (last added, first run)."""
        self.cleanups.append(fn)

    def ctl(self, *args, config=None, input=None, check=True):
        """Run mailtierctl [-c config] args...; returns CompletedProcess
        (text). With check, a non-zero exit raises HarnessError."""
        argv = [binary("ctl/mailtierctl")]
        if config is not None:
            argv += ["-c", config]
        argv += [str(a) for a in args]
        env = dict(os.environ, MAILTIER_DATADIR=os.environ.get("MT_SRCDIR", ""))
        p = subprocess.run(argv, input=input, capture_output=True, text=True,
                           timeout=600, env=env)
        self.note(f"{' '.join(argv)} -> {p.returncode}")
        if check and p.returncode != 0:
            raise HarnessError(f"{' '.join(argv)} exited {p.returncode}:\n"
                               f"{p.stdout}{p.stderr}")
        return p

    def directory_up(self, domain="example.test", shards=("s1", "s2"),
                     auth_method="hash", name="slapd"):
        """Start a local slapd with `mailtierctl directory up` in the test's
        directory (stopped at the end) and write a config with its
        [directory] section and [shards] naming the given shards (ports are
        placeholders). Returns dict(dir, port, uri, conf)."""
        if shutil.which("slapd", path=os.environ.get("PATH", "") +
                        ":/usr/sbin:/sbin") is None:
            raise Skip("slapd is not installed (Debian package slapd)")
        d = os.path.join(self.tmpdir, name)
        port = free_port()
        self.ctl("directory", "up", "--dir", d, "--port", port,
                 "--domain", domain, "--auth-method", auth_method)
        self.add_cleanup(lambda: self.ctl("directory", "down", "--dir", d,
                                          check=False))
        conf = os.path.join(d, "mailtier.conf")
        with open(os.path.join(d, "directory.conf")) as f:
            text = f.read()
        text += "\n[shards]\n" + "".join(
            f"{s} = 127.0.0.1:{1 + i}, 127.0.0.1:{101 + i}\n"
            for i, s in enumerate(shards))
        with open(conf, "w") as f:
            f.write(text)
        return {"dir": d, "port": port, "uri": f"ldap://127.0.0.1:{port}/",
                "conf": conf}

    def directory_providers_up(self, n=2, domain="example.test",
                               shards=("s1", "s2"), auth_method="hash",
                               name="provider"):
        """Start n local slapds as one multi-provider group (server ids
        1..n, each a delta-syncrepl consumer of the others) with
        `mailtierctl directory up --server-id --peer`: provider 1 loads the
        base entries, the others start from its copy (--copy-from) with
        its secrets. Writes a config whose [directory] uris list all of them,
        in order (NAMEs.conf; their directories are NAME1..NAMEn).
        Returns dict(providers=[dict(dir, port, uri)], conf)."""
        if shutil.which("slapd", path=os.environ.get("PATH", "") +
                        ":/usr/sbin:/sbin") is None:
            raise Skip("slapd is not installed (Debian package slapd)")
        ports = free_ports(n)
        provs = [{"dir": os.path.join(self.tmpdir, f"{name}{i + 1}"),
                  "port": ports[i],
                  "uri": f"ldap://127.0.0.1:{ports[i]}/"} for i in range(n)]
        for i, pv in enumerate(provs):
            args = ["directory", "up", "--dir", pv["dir"], "--port", pv["port"],
                    "--domain", domain, "--auth-method", auth_method,
                    "--server-id", i + 1]
            for other in provs:
                if other is not pv:
                    args += ["--peer", other["uri"]]
            if i > 0:
                os.makedirs(pv["dir"], mode=0o700, exist_ok=True)
                for name in ("admin.secret", "service.secret"):
                    src = os.path.join(provs[0]["dir"], name)
                    dst = os.path.join(pv["dir"], name)
                    if not os.path.exists(dst):
                        fd = os.open(dst, os.O_WRONLY | os.O_CREAT, 0o600)
                        with open(src, "rb") as f:
                            os.write(fd, f.read())
                        os.close(fd)
                args += ["--copy-from", provs[0]["dir"]]
            self.ctl(*args)
            self.add_cleanup(lambda d=pv["dir"]: self.ctl(
                "directory", "down", "--dir", d, check=False))
        conf = os.path.join(self.tmpdir, f"{name}s.conf")
        with open(os.path.join(provs[0]["dir"], "directory.conf")) as f:
            text = f.read()
        text = text.replace(f"uris = {provs[0]['uri']}\n",
                            "uris = " + " ".join(p["uri"] for p in provs) + "\n")
        text += "\n[shards]\n" + "".join(
            f"{s} = 127.0.0.1:{1 + i}, 127.0.0.1:{101 + i}\n"
            for i, s in enumerate(shards))
        with open(conf, "w") as f:
            f.write(text)
        return {"providers": provs, "conf": conf}

    # Conveniences for tests

    free_port = staticmethod(free_port)
    free_ports = staticmethod(free_ports)
    free_port_block = staticmethod(free_port_block)
    binary = staticmethod(binary)

    @staticmethod
    def connect(port, host="127.0.0.1", timeout=10.0):
        """A connected TCP socket with a timeout on every operation."""
        return socket.create_connection((host, port), timeout=timeout)


def _terminated(signum, frame):
    raise HarnessError(f"terminated by signal {signum} (bounded.sh's time "
                       "bound, MT_TEST_TIMEOUT?)")


def main(test, *args):
    """Run test(harness, *args) and exit 0 (pass), 1 (fail) or 77 (skip).
    A SIGTERM (tests/harness/bounded.sh's time bound) fails the test the
    same way, so its daemons are stopped and their logs printed."""
    signal.signal(signal.SIGTERM, _terminated)
    try:
        with Harness() as h:
            test(h, *args)
    except Skip as e:
        print(f"SKIP: {e}", file=sys.stderr)
        sys.exit(EXIT_SKIP)
    except Exception:
        traceback.print_exc()
        print("FAIL", file=sys.stderr)
        sys.exit(1)
    print("PASS", file=sys.stderr)
    sys.exit(0)
