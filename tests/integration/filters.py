"""filters -- the real mail filters the MTA's milter tests (#17) talk to,
each started on free loopback ports under the harness (mtharness), with
its own configuration in the test's temporary directory, nothing from the
system's /etc except read-only defaults, and no traffic off the machine:

  DnsServer  unbound serving test zones given as Python data (SPF, DKIM,
             DMARC TXT, A, MX) on 127.0.0.1:PORT; every other name is
             NXDOMAIN, nothing is ever recursed or forwarded.
  Rspamd     rspamd 3.4 with a milter proxy worker (self-scanning) and a
             normal worker for rspamc; DNS through the DnsServer; SPF, DKIM
             and DMARC evaluated for loopback clients; DMARC p=reject
             failures rejected; Authentication-Results, X-Spamd-Result,
             X-Spam-Status added.
  OpenDkim   opendkim in sign+verify mode for example.test (selector mt),
             signing only mail of an authenticated client, resolving
             through the DnsServer.

    import filters

    def test(h):
        with filters.DnsServer(h) as dns, filters.Rspamd(h, dns) as spam, \\
                filters.OpenDkim(h, dns) as dkim:
            ... mta config: milters = spam.milter_address, dkim.milter_address
            verdict = filters.verify_dkim(spam, stored_message_bytes)
            assert verdict.result == "pass", verdict

Also: standard_zones() / make_dkim_key() (keys made with openssl),
dns_query() (a stub resolver), Rspamd.check() (rspamc) -> ScanResult,
verify_dkim() -> DkimVerdict (rspamd's dkim module judges, not this
code), sign_message() (opendkim-testmsg: note it signs rsa-sha1; for
rsa-sha256 pass mail through an OpenDkim(h, dns, domain="good.test")).

Every daemon runs through h.start(), so its output is in the harness's
log dump when a test fails; stop() (or leaving the with block) stops it,
and whatever is left of its process group is killed when the test ends.
The daemons drop root: unbound and rspamd are started as their Debian
users (setpriv), opendkim drops to its UserID itself after reading its
key. The harness's private directory is made traversable (0711) for
that; the files the daemons read are in a 0755 subdirectory per filter.

Trust boundary: test code only. The filters' answers are what the tests
check, so every wait on them is bounded.
"""

import base64
import json
import os
import pwd
import re
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time

import mtharness

LOOPBACK = "127.0.0.1"
SELECTOR = "mt"
OUR_DOMAIN = "example.test"


# Shared helpers

def have(program):
    """The path of program (also searched in the sbin directories)."""
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return shutil.which(program, path=path)


def require(*programs):
    """Skip the test (mtharness.Skip) if a program is not installed."""
    missing = [p for p in programs if not have(p)]
    if missing:
        raise mtharness.Skip(f"not installed: {' '.join(missing)} (Debian "
                             "packages unbound, rspamd, opendkim, "
                             "opendkim-tools: scripts/lib.sh installs them)")


def filter_dir(h, name):
    """A directory for one filter's files under the harness's tmpdir, which
    an unprivileged daemon can reach (the tmpdir becomes 0711)."""
    os.chmod(h.tmpdir, 0o711)
    d = os.path.join(h.tmpdir, name)
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    return d


def as_user(user):
    """argv prefix running a program as user (and its group, no
    supplementary groups) when we are root; nothing otherwise."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", f"--reuid={user}", f"--regid={pwd.getpwnam(user).pw_gid}",
            "--clear-groups", "--"]


def system_user(*candidates):
    """The first of the user names that exists (Debian's packages create
    them); "nobody" as the last resort."""
    for u in candidates + ("nobody",):
        try:
            pwd.getpwnam(u)
            return u
        except KeyError:
            continue
    raise mtharness.HarnessError(f"none of the users {candidates} exist")


def chown_tree(path, user):
    """Give path (and everything below it) to user and its group."""
    pw = pwd.getpwnam(user)
    if os.geteuid() != 0:
        return
    for root, dirs, files in os.walk(path):
        for p in [root] + [os.path.join(root, x) for x in dirs + files]:
            os.chown(p, pw.pw_uid, pw.pw_gid)


def free_udp_tcp_port():
    """A port free for both TCP and UDP on 127.0.0.1 (a DNS server takes
    both)."""
    for _ in range(50):
        port = mtharness.free_port()
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.bind((LOOPBACK, port))
            return port
        except OSError:
            continue
        finally:
            u.close()
    raise mtharness.HarnessError("no port free for both TCP and UDP")


def wait_for(what, cond, timeout=30.0, proc=None):
    """cond()'s first true value, polled every 0.1 s; HarnessError naming
    what after timeout seconds (or at once if proc, a Daemon, died)."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if proc is not None and not proc.running():
            raise mtharness.HarnessError(f"{proc.name} exited while waiting "
                                         f"for {what}")
        if time.monotonic() >= deadline:
            raise mtharness.HarnessError(f"timed out after {timeout:.0f} s "
                                         f"waiting for {what}")
        time.sleep(0.1)


def _kill_group(pgid):
    """SIGKILL what is left of a daemon's process group (the harness starts
    each daemon in a session of its own, so its pid is the group's id)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _Filter:
    """Context-manager glue: with X(...) as x starts x and stops it."""

    daemon = None

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        # A passing test's daemon must stop cleanly; a failing test's is
        # stopped as well as it goes (the test's error is the one to see).
        if exc_type is None:
            self.stop()
        elif self.daemon is not None:
            try:
                self.daemon.stop(timeout=10, expect=None)
            except mtharness.HarnessError:
                pass
            _kill_group(self.daemon.pid)
        return False

    def _start_daemon(self, argv, **kwargs):
        """h.start(self.name, argv, notify=False, **kwargs); whatever is
        left of the daemon's process group (rspamd's workers outlive a
        killed main process) is killed when the test ends, or at once if
        it does not start."""
        try:
            self.daemon = self.h.start(self.name, argv, notify=False, **kwargs)
        except Exception:
            for d in self.h.daemons:
                if d.name == self.name and d.proc is not None:
                    d.kill()
                    _kill_group(d.pid)
            raise
        pid = self.daemon.pid
        self.h.add_cleanup(lambda: _kill_group(pid))
        return self.daemon

    def stop(self, timeout=15.0):
        """Stop the daemon (SIGTERM, bounded); HarnessError if it did not
        exit cleanly."""
        if self.daemon is not None and self.daemon.proc is not None:
            self.daemon.stop(timeout=timeout)

    @property
    def log(self):
        """Path of the daemon's log (stdout and stderr)."""
        return self.daemon.log_path

    def log_text(self):
        return self.daemon.log() if self.daemon else ""


# DKIM keys

class DkimKey:
    """An RSA key pair for DKIM: private_key is the PEM file's path, txt
    the DNS TXT record to publish at record_name."""

    def __init__(self, domain, selector, private_key, public_b64):
        self.domain = domain
        self.selector = selector
        self.private_key = private_key
        self.public_b64 = public_b64

    @property
    def record_name(self):
        return f"{self.selector}._domainkey.{self.domain}"

    @property
    def txt(self):
        return f"v=DKIM1; k=rsa; p={self.public_b64}"

    def __repr__(self):
        return f"DkimKey({self.record_name}, {self.private_key})"


def make_dkim_key(directory, domain, selector=SELECTOR, bits=2048):
    """A new key pair in directory/<domain>.<selector>.key (mode 0600)."""
    path = os.path.join(directory, f"{domain}.{selector}.key")
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt",
                    f"rsa_keygen_bits:{bits}", "-out", path],
                   check=True, capture_output=True, timeout=120)
    os.chmod(path, 0o600)
    der = subprocess.run(["openssl", "pkey", "-in", path, "-pubout",
                          "-outform", "DER"],
                         check=True, capture_output=True, timeout=60).stdout
    return DkimKey(domain, selector, path, base64.b64encode(der).decode())


def sign_message(key, message, timeout=30):
    """message (bytes) signed with key by opendkim-testmsg (OpenDKIM's
    library, not this module's code): for tests that need mail already
    signed by another domain, e.g. good.test."""
    require("opendkim-testmsg")
    p = subprocess.run([have("opendkim-testmsg"), "-C", "-d", key.domain,
                        "-s", key.selector, "-k", key.private_key],
                       input=message, capture_output=True, timeout=timeout)
    if p.returncode != 0 or b"DKIM-Signature" not in p.stdout:
        raise mtharness.HarnessError(
            f"opendkim-testmsg failed ({p.returncode}): {p.stderr!r}")
    return p.stdout


# DNS

def standard_zones(directory):
    """The zones every milter test shares, and their DKIM keys:
    good.test (SPF passes loopback, DKIM key "mt", DMARC p=reject),
    reject.test (SPF allows only 192.0.2.1 so loopback fails, DMARC
    p=reject, no DKIM key) and example.test (ours: SPF passes loopback,
    the key OpenDKIM signs with, DMARC p=none). Every A record is
    loopback. Returns (zones, {domain: DkimKey})."""
    keys = {d: make_dkim_key(directory, d) for d in ("good.test", OUR_DOMAIN)}
    zones = {}
    for domain, spf, dmarc in (
            ("good.test", "v=spf1 ip4:127.0.0.0/8 -all", "v=DMARC1; p=reject"),
            ("reject.test", "v=spf1 ip4:192.0.2.1 -all", "v=DMARC1; p=reject"),
            (OUR_DOMAIN, "v=spf1 ip4:127.0.0.0/8 -all", "v=DMARC1; p=none")):
        records = [("@", "TXT", spf), ("_dmarc", "TXT", dmarc),
                   ("@", "A", LOOPBACK), ("@", "MX", f"10 mx.{domain}"),
                   ("mx", "A", LOOPBACK)]
        if domain in keys:
            records.append((f"{SELECTOR}._domainkey", "TXT", keys[domain].txt))
        zones[domain] = records
    return zones, keys


def _txt_strings(value):
    """A TXT value as zone-file character strings of at most 255 octets."""
    parts = value if isinstance(value, (list, tuple)) else \
        [value[i:i + 255] for i in range(0, max(len(value), 1), 255)]
    out = []
    for p in parts:
        if "'" in p:
            raise ValueError(f"TXT value with a single quote: {p!r}")
        out.append('"' + p.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return " ".join(out)


class DnsAnswer:
    """A DNS reply: rcode name ("NOERROR", "NXDOMAIN", ...) and the answer
    records of the asked type as text (TXT: the strings joined; MX:
    "pref host"; A: the address)."""

    RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN",
              4: "NOTIMP", 5: "REFUSED"}

    def __init__(self, rcode, records):
        self.rcode = self.RCODES.get(rcode, str(rcode))
        self.records = records

    def __repr__(self):
        return f"DnsAnswer({self.rcode}, {self.records!r})"


_TYPES = {"A": 1, "NS": 2, "CNAME": 5, "PTR": 12, "MX": 15, "TXT": 16,
          "AAAA": 28}


def dns_query(port, name, rtype="A", host=LOOPBACK, timeout=3.0):
    """One UDP query to host:port (a tiny stub resolver: no dig needed)."""
    qid = int.from_bytes(os.urandom(2), "big")
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.rstrip(".").split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\0" + struct.pack("!HH", _TYPES[rtype], 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.sendto(q, (host, port))
        deadline = time.monotonic() + timeout
        while True:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            data, _ = s.recvfrom(65535)
            if data[:2] == q[:2]:
                break
    _, flags, qd, an, _, _ = struct.unpack("!HHHHHH", data[:12])
    pos = 12
    for _ in range(qd):
        pos = _skip_name(data, pos) + 4
    records = []
    for _ in range(an):
        pos = _skip_name(data, pos)
        t, _, _, rdlen = struct.unpack("!HHIH", data[pos:pos + 10])
        rd = data[pos + 10:pos + 10 + rdlen]
        rdpos = pos + 10
        pos += 10 + rdlen
        if t != _TYPES[rtype]:
            continue
        if t == 1:
            records.append(socket.inet_ntoa(rd))
        elif t == 16:
            parts, i = [], 0
            while i < len(rd):
                parts.append(rd[i + 1:i + 1 + rd[i]].decode("utf-8", "replace"))
                i += 1 + rd[i]
            records.append("".join(parts))
        elif t == 15:
            records.append(f"{struct.unpack('!H', rd[:2])[0]} "
                           f"{_read_name(data, rdpos + 2)}")
        else:
            records.append(rd.hex())
    return DnsAnswer(flags & 0xF, records)


def _skip_name(data, pos):
    while True:
        n = data[pos]
        if n == 0:
            return pos + 1
        if n & 0xC0 == 0xC0:
            return pos + 2
        pos += 1 + n


def _read_name(data, pos, depth=0):
    labels = []
    while depth < 20:
        n = data[pos]
        if n == 0:
            break
        if n & 0xC0 == 0xC0:
            ptr = struct.unpack("!H", data[pos:pos + 2])[0] & 0x3FFF
            labels.append(_read_name(data, ptr, depth + 1))
            break
        labels.append(data[pos + 1:pos + 1 + n].decode())
        pos += 1 + n
    return ".".join(labels)


class DnsServer(_Filter):
    """unbound on 127.0.0.1:port, authoritative for the zones given as
    {zone: [(owner, type, value), ...]}: owner "@" is the zone itself, a
    name not ending in the zone gets it appended; type is TXT (a value
    over 255 octets is split into several strings), A, AAAA, MX
    ("pref host"), CNAME, PTR. `local-zone: "." static` answers every
    other name NXDOMAIN (NODATA for a known name and another type) at
    once: nothing is forwarded or recursed (module-config "iterator" with
    no root hints ever used). With standard=True (the default) the
    standard_zones() come first; .keys holds their DkimKeys.

    .port, .host, .nameserver ("127.0.0.1:PORT"), .keys, .query(name,
    type) -> DnsAnswer, .queries() (what was asked, from unbound's
    log-queries lines), reload(zones) to change the zones while running."""

    def __init__(self, h, zones=None, standard=True, name="unbound"):
        require("unbound")
        self.h = h
        self.name = name
        self.dir = filter_dir(h, name)
        self.keys = {}
        self.zones = {}
        if standard:
            self.zones, self.keys = standard_zones(self.dir)
        for zone, records in (zones or {}).items():
            self.zones.setdefault(zone, []).extend(records)
        self.host = LOOPBACK
        self.port = None
        self.conf = os.path.join(self.dir, "unbound.conf")
        self.user = system_user("unbound")

    @property
    def nameserver(self):
        return f"{self.host}:{self.port}"

    def private_key(self, domain):
        """Path of a standard zone's DKIM private key."""
        return self.keys[domain].private_key

    def _local_data(self):
        lines = []
        for zone, records in sorted(self.zones.items()):
            zone = zone.rstrip(".")
            lines.append(f'  local-zone: "{zone}." static')
            for owner, rtype, value in records:
                owner = owner.rstrip(".")
                if owner == "@":
                    fqdn = zone
                elif owner == zone or owner.endswith("." + zone):
                    fqdn = owner
                else:
                    fqdn = f"{owner}.{zone}"
                rtype = rtype.upper()
                if rtype == "TXT":
                    rdata = _txt_strings(value)
                elif rtype == "MX" and isinstance(value, (tuple, list)):
                    rdata = f"{value[0]} {value[1].rstrip('.')}."
                elif rtype in ("MX", "CNAME", "PTR", "NS"):
                    rdata = value.rstrip(".") + "."
                else:
                    rdata = str(value)
                lines.append(f"  local-data: '{fqdn}. 300 IN {rtype} {rdata}'")
        return lines

    def write_config(self):
        lines = [
            "# Written by tests/integration/filters.py: a stub for tests.",
            "server:",
            f"  interface: {self.host}",
            f"  port: {self.port}",
            "  do-ip4: yes",
            "  do-ip6: no",
            "  do-daemonize: no",
            '  username: ""',
            '  chroot: ""',
            f'  directory: "{self.dir}"',
            '  pidfile: ""',
            '  logfile: ""',
            "  use-syslog: no",
            "  log-queries: yes",
            "  verbosity: 1",
            "  num-threads: 1",
            "  access-control: 127.0.0.0/8 allow",
            # No validator (no trust anchor to fetch) and no recursion:
            # every name falls under a local zone, "." included.
            '  module-config: "iterator"',
            "  do-not-query-localhost: yes",
            '  local-zone: "." static',
        ] + self._local_data() + [
            "remote-control:",
            "  control-enable: no",
        ]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.chmod(self.conf, 0o644)
        check = subprocess.run([have("unbound-checkconf") or "unbound-checkconf",
                                self.conf], capture_output=True, text=True,
                               timeout=30)
        if check.returncode != 0:
            raise mtharness.HarnessError(f"unbound-checkconf {self.conf}: "
                                         f"{check.stdout}{check.stderr}")

    def start(self):
        self.port = free_udp_tcp_port()
        self.write_config()
        argv = as_user(self.user) + [have("unbound"), "-d", "-c", self.conf]
        self._start_daemon(argv, ready_port=self.port, ready_timeout=30)
        wait_for("unbound to answer", self._answers, 20, self.daemon)
        return self

    def _answers(self):
        try:
            return dns_query(self.port, "nonexistent.invalid", "A",
                             timeout=0.5).rcode == "NXDOMAIN"
        except OSError:
            return False

    def reload(self, zones=None, standard_too=True):
        """Replace the zones (keeping the standard ones if standard_too)
        and make unbound re-read its config (SIGHUP)."""
        if zones is not None:
            base = {z: r for z, r in self.zones.items()
                    if standard_too and z in ("good.test", "reject.test",
                                              OUR_DOMAIN)}
            base.update(zones)
            self.zones = base
        self.write_config()
        starts = self.log_text().count("start of service")
        self.daemon.send_signal(signal.SIGHUP)
        wait_for("unbound to reload",
                 lambda: self.log_text().count("start of service") > starts
                 and self._answers(), 20, self.daemon)

    def query(self, name, rtype="A", timeout=3.0):
        return dns_query(self.port, name, rtype, self.host, timeout)

    def queries(self):
        """(client, name, type) of every query unbound logged."""
        out = []
        for m in re.finditer(r"info: (\S+) (\S+)\. (\S+) IN$", self.log_text(),
                             re.M):
            out.append((m.group(1), m.group(2), m.group(3)))
        return out


# rspamd

RSPAMD_ACTIONS = ("reject", "soft reject", "rewrite subject", "add header",
                  "greylist", "no action")

# Modules off: each would reach for something outside the machine (HTTP
# maps of maps.rspamd.com, public RBLs and fuzzy servers by DNS, the ASN
# zone of rspamd.com) or needs redis, which these tests do not run. Their
# DNS names would only get NXDOMAIN from the DnsServer, but a test must
# not even try; the log is checked for map fetches (see Rspamd.start).
RSPAMD_DISABLED = ("fuzzy_check", "rbl", "multimap", "phishing", "asn",
                   "whitelist", "rspamd_update", "url_redirector",
                   "dkim_signing", "arc", "neural", "ratelimit", "greylist",
                   "reputation", "history_redis", "replies", "metadata_exporter",
                   "clickhouse", "elastic", "metric_exporter", "emails",
                   "spamtrap", "mx_check", "dcc", "antivirus",
                   "external_services", "p0f", "bimi", "mid", "mime_types",
                   "maillist", "trie", "once_received", "hfilter")


# The public suffixes rspamd knows here (its url_tld option).
RSPAMD_TLDS = ("test", "example", "invalid", "localhost", "com", "net", "org",
               "info", "biz", "io", "de", "uk", "co.uk", "fr", "nl", "ru",
               "cn", "jp", "us", "eu", "edu", "gov")


class Rspamd(_Filter):
    """rspamd in the foreground as its own unprivileged user, with a config
    of its own in the test directory that includes Debian's defaults from
    /etc/rspamd (read-only) and overrides what a test needs:

    * options.dns.nameserver = the DnsServer; check_local = true: rspamd
      counts 127.0.0.0/8 (and ::1, unix sockets) as "local" whatever
      local_addrs says (rspamd_inet_address_is_local), and SPF, DKIM and
      DMARC skip local clients unless check_local is set. local_addrs is
      emptied too. check_authed stays false: authenticated senders (the
      milter's {auth_authen}, rspamc -u) skip those checks, as in
      production.
    * dmarc.actions { reject = "reject"; quarantine = "add header"; }
      (3.4's plugins/dmarc.lua: settings.actions[disposition] becomes a
      pre-result), so a p=reject failure is refused.
    * milter_headers: Authentication-Results, X-Spamd-Result,
      X-Spam-Status, X-Rspamd-Action, also for local and authenticated
      senders; the proxy adds X-Spam: Yes on "add header".
    * disable_hyperscan, and url_tld a short list of top-level domains
      (RSPAMD_TLDS) instead of the 9,600 of the public suffix list: each
      would cost 15-20 s of compilation at every start in a fresh
      directory. URLs under other TLDs are not recognised as URLs.
    * no controller, no redis, and the modules in RSPAMD_DISABLED off.

    Workers: rspamd_proxy in milter mode (self_scan, timeout 120 s) on
    milter_port, normal on worker_port (for rspamc). actions thresholds
    are Debian's (GTUBE is rejected).

    Seen over the milter (the self-check prints it with MT_VERBOSE=1):
    its OPTNEG reply takes every action and SMFIP_NR_* for every stage
    (it answers only at end of body); then INSHEADER at index 1 of
    Authentication-Results (authserv-id: the {daemon_name} macro) and
    ADDHEADER of X-Spamd-Result, X-Rspamd-Action, X-Spam-Status; a
    rejection is REPLYCODE "554 5.7.1 Spam message rejected".

    .milter_address ("inet:127.0.0.1:PORT"), .worker_address
    ("127.0.0.1:PORT"), .log, check(message, ...) -> ScanResult.
    local_d: {file name: text} for its local.d, e.g. {"actions.conf":
    "reject = 10;"} (a name used here replaces this class's file of that
    name: options.inc, dmarc.conf, milter_headers.conf). disabled: the
    modules to turn off (default RSPAMD_DISABLED)."""

    def __init__(self, h, dns, name="rspamd", local_d=None,
                 milter_timeout="120s", disabled=None):
        require("rspamd", "rspamc")
        self.h = h
        self.dns = dns
        self.name = name
        self.dir = filter_dir(h, name)
        self.local_d = dict(local_d or {})
        self.milter_timeout = milter_timeout
        self.disabled = RSPAMD_DISABLED if disabled is None else disabled
        self.user = system_user("_rspamd")
        self.milter_port = self.worker_port = None

    @property
    def milter_address(self):
        return f"inet:{LOOPBACK}:{self.milter_port}"

    @property
    def worker_address(self):
        return f"{LOOPBACK}:{self.worker_port}"

    def _write(self, rel, text):
        path = os.path.join(self.dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def write_config(self):
        self._write("rspamd.conf", f"""\
# Written by tests/integration/filters.py. $CONFDIR is Debian's /etc/rspamd
# (read only); $LOCAL_CONFDIR, $DBDIR, $RUNDIR, $LOGDIR are ours.
.include "$CONFDIR/common.conf"

options {{
    pidfile = "$RUNDIR/rspamd.pid";
    .include "$CONFDIR/options.inc"
    .include(try=true; priority=1,duplicate=merge) "$LOCAL_CONFDIR/local.d/options.inc"
}}

logging {{
    type = "console";
    .include "$CONFDIR/logging.inc"
    level = "info";
    color = false;
    log_usec = true;
}}

worker "normal" {{
    bind_socket = "{self.worker_address}";
    .include "$CONFDIR/worker-normal.inc"
    count = 1;
}}

worker "rspamd_proxy" {{
    bind_socket = "{LOOPBACK}:{self.milter_port}";
    milter = yes;
    timeout = {self.milter_timeout};
    upstream "local" {{
        default = yes;
        self_scan = yes;
    }}
    count = 1;
    max_retries = 5;
    discard_on_reject = false;
    quarantine_on_reject = false;
    spam_header = "X-Spam";
    reject_message = "Spam message rejected";
}}
""")
        local = {
            "options.inc": f"""\
local_addrs = [];
url_tld = "{os.path.join(self.dir, 'tlds.dat')}";
check_local = true;
check_authed = false;
disable_hyperscan = true;
dns {{
    nameserver = ["{self.dns.nameserver}"];
    timeout = 1s;
    retransmits = 2;
}}
""",
            "dmarc.conf": """\
actions {
    reject = "reject";
    quarantine = "add header";
}
""",
            "milter_headers.conf": """\
use = ["authentication-results", "x-spamd-result", "x-spam-status",
       "x-rspamd-action"];
skip_local = false;
skip_authenticated = false;
""",
        }
        local.update(self.local_d)
        self._write("tlds.dat", "\n".join(RSPAMD_TLDS) + "\n")
        for fname, text in local.items():
            self._write(os.path.join("local", "local.d", fname), text)
        for module in self.disabled:
            self._write(os.path.join("local", "override.d", f"{module}.conf"),
                        "enabled = false;\n")
        for d in ("db", "run", "log"):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
            chown_tree(os.path.join(self.dir, d), self.user)

    def argv(self):
        return as_user(self.user) + [
            have("rspamd"), "-f", "-c", os.path.join(self.dir, "rspamd.conf"),
            "--var", "CONFDIR=/etc/rspamd",
            "--var", f"LOCAL_CONFDIR={os.path.join(self.dir, 'local')}",
            "--var", f"DBDIR={os.path.join(self.dir, 'db')}",
            "--var", f"RUNDIR={os.path.join(self.dir, 'run')}",
            "--var", f"LOGDIR={os.path.join(self.dir, 'log')}"]

    def start(self, ready_timeout=120.0):
        self.milter_port, self.worker_port = mtharness.free_ports(2)
        self.write_config()
        self._start_daemon(self.argv(), ready_port=self.worker_port,
                           ready_timeout=ready_timeout)
        wait_for("rspamd's normal worker to answer /ping", self._pong,
                 ready_timeout, self.daemon)
        wait_for("rspamd's milter proxy to answer OPTNEG",
                 lambda: milter_probe(LOOPBACK, self.milter_port),
                 ready_timeout, self.daemon)
        fetched = re.findall(r"(?:added map|read \S+ of \d+ elements from) "
                             r"(https?://\S+)", self.log_text())
        if fetched:
            raise mtharness.HarnessError(
                f"rspamd set up remote maps {sorted(set(fetched))}: "
                "disable their module in filters.RSPAMD_DISABLED")
        return self

    def _pong(self):
        try:
            with socket.create_connection((LOOPBACK, self.worker_port),
                                          timeout=2) as s:
                s.sendall(b"GET /ping HTTP/1.0\r\n\r\n")
                data = b""
                while len(data) < 4096:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                return b"pong" in data
        except OSError:
            return False

    def check(self, message, ip=LOOPBACK, mail_from=None, rcpts=(), helo=None,
              hostname=None, user=None, timeout=30):
        """Scan message (bytes) with rspamc over the normal worker as if
        received from ip (with the envelope and HELO given); ScanResult."""
        argv = [have("rspamc"), "-h", self.worker_address, "-j",
                "-t", str(timeout), "-i", ip]
        if mail_from is not None:
            argv += ["-F", mail_from]
        for r in rcpts:
            argv += ["-r", r]
        if helo:
            argv += ["--helo", helo]
        if hostname:
            argv += ["--hostname", hostname]
        if user:
            argv += ["-u", user]
        p = subprocess.run(argv + ["symbols"], input=message,
                           capture_output=True, timeout=timeout + 10)
        if p.returncode != 0:
            raise mtharness.HarnessError(f"{' '.join(argv)} exited "
                                         f"{p.returncode}: {p.stderr!r}")
        return ScanResult(p.stdout.decode("utf-8", "replace"))


class ScanResult:
    """rspamc's JSON answer: .action, .score, .symbols {name: {score,
    options}}, has(symbol), .raw."""

    def __init__(self, text):
        self.raw = text
        start = text.find("{")
        if start < 0:
            raise mtharness.HarnessError(f"rspamc gave no JSON: {text!r}")
        data = json.loads(text[start:])
        if "action" not in data and len(data) == 1:
            data = next(iter(data.values()))       # keyed by file name
        self.data = data
        self.action = data.get("action")
        self.score = data.get("score")
        self.symbols = data.get("symbols", {})

    def has(self, symbol):
        return symbol in self.symbols

    def options(self, symbol):
        return self.symbols.get(symbol, {}).get("options", [])

    def __repr__(self):
        return (f"ScanResult(action={self.action!r}, score={self.score}, "
                f"symbols={sorted(self.symbols)})")


class DkimVerdict:
    """The outcome of a DKIM check: result is "pass", "fail", "permerror",
    "temperror" or "none"; domains the signing domains that passed;
    trace rspamd's DKIM_TRACE options ("example.test:+")."""

    def __init__(self, result, domains, trace, scan):
        self.result = result
        self.domains = domains
        self.trace = trace
        self.scan = scan

    def __bool__(self):
        return self.result == "pass"

    def __repr__(self):
        return (f"DkimVerdict({self.result}, domains={self.domains}, "
                f"trace={self.trace}, {self.scan!r})")


DKIM_SYMBOLS = (("R_DKIM_REJECT", "fail"), ("R_DKIM_PERMFAIL", "permerror"),
                ("R_DKIM_TEMPFAIL", "temperror"), ("R_DKIM_ALLOW", "pass"),
                ("R_DKIM_NA", "none"))


def verify_dkim(rspamd, message, ip="127.0.0.2"):
    """Verify the DKIM signatures of message (bytes, as stored) with rspamd
    (its dkim module, keys from the DnsServer). A failing signature wins
    over a passing one."""
    scan = rspamd.check(message, ip=ip)
    result = "none"
    for symbol, name in DKIM_SYMBOLS:
        if scan.has(symbol):
            result = name
            break
    trace = scan.options("DKIM_TRACE")
    domains = [t[:-2] for t in trace if t.endswith(":+")]
    return DkimVerdict(result, domains, trace, scan)


# OpenDKIM

class _SyslogSink:
    """A Unix datagram socket standing in for /dev/log: what the daemon
    logs through syslog(3) is appended to its log file."""

    def __init__(self, path, log_path):
        self.path = path
        self.log_path = log_path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        os.chmod(path, 0o666)
        self.sock.settimeout(0.2)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name=f"syslog:{path}")
        self.thread.start()

    def _run(self):
        while not self.stopping.is_set():
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            with open(self.log_path, "ab") as f:
                f.write(b"syslog: " + data.rstrip(b"\0\n") + b"\n")

    def close(self):
        self.stopping.set()
        self.thread.join(2)
        self.sock.close()


_UNSHARE_OK = None

# Where opendkim finds its files inside its mount namespace (see OpenDkim).
OPENDKIM_NS_DIR = "/dev/opendkim"


def _private_dev(sock_path, files, argv):
    """argv run in a mount namespace of its own whose /dev is a small
    tmpfs (root's, 0755) holding null, zero, random, urandom, log ->
    sock_path, and copies of files ({source: name}, mode 0600 for names
    ending in .key, else 0644) in OPENDKIM_NS_DIR. Raises Skip where
    mount namespaces are not available (not root)."""
    global _UNSHARE_OK
    if _UNSHARE_OK is None:
        _UNSHARE_OK = (os.geteuid() == 0 and have("unshare") is not None and
                       subprocess.run(["unshare", "--mount", "--propagation",
                                       "private", "true"],
                                      capture_output=True).returncode == 0)
    if not _UNSHARE_OK:
        raise mtharness.Skip("opendkim needs root and a private mount "
                             "namespace (unshare --mount) here")
    d = OPENDKIM_NS_DIR
    script = ["mount -t tmpfs -o mode=0755,size=1m mt-dev /dev",
              "mknod -m 666 /dev/null c 1 3", "mknod -m 666 /dev/zero c 1 5",
              "mknod -m 666 /dev/random c 1 8",
              "mknod -m 666 /dev/urandom c 1 9",
              'ln -s "$0" /dev/log', f"mkdir -m 0755 {d}"]
    for src, name in files.items():
        mode = "0600" if name.endswith(".key") else "0644"
        script += [f"cp '{src}' {d}/{name}", f"chmod {mode} {d}/{name}"]
    script.append('exec "$@"')
    return (["unshare", "--mount", "--propagation", "private", "--",
             "sh", "-c", " && ".join(script), sock_path] + argv)


class OpenDkim(_Filter):
    """opendkim -f with its own config: Mode sv, signing as `domain` with
    selector mt and the DnsServer's key for it, relaxed/simple.

    When it signs (opendkim(8), OPERATION): the From: domain is `domain`
    AND one of (a) the MTA sent a non-empty {auth_type} macro (built in:
    the SMTP client authenticated), (b) the client address (CONNECT) is
    in InternalHosts, (c) the MTA's {daemon_name} is in MTA, (d) a macro
    of MacroList is set. InternalHosts defaults to 127.0.0.1, which would
    sign every unauthenticated loopback message: it is set to 192.0.2.1
    (TEST-NET-1, never a client here), so loopback mail is verified, not
    signed. MacroList {auth_authen} adds (d), so an MTA that sends only
    {auth_authen} (SASL login name) is treated as authenticated too; the
    macros must arrive before or with EOH (Sendmail and Postfix send them
    with MAIL). MacroList takes bare names: opendkim adds the braces when
    it looks one up ("{auth_authen}" there never matches). Its OPTNEG
    reply asks for SETSYMLIST at EOH: "i {daemon_name} {auth_type}
    auth_authen" (that bare name too), and for HDR_LEADSPC: its header
    values start with the space that follows the colon.

    DNS: Debian's opendkim uses libunbound; ResolverConfiguration names an
    unbound config with forward-zone "." -> 127.0.0.1@PORT and
    do-not-query-localhost: no (libunbound's default yes ignores a
    loopback forwarder) and local-zone "test." nodefault (a built-in
    local zone of unbound, RFC 6761, answered NXDOMAIN itself); either
    gives "key not found in DNS". No trust anchor: the test zones are
    unsigned.

    It runs in a mount namespace of its own (needs root; the test is
    skipped otherwise) for two reasons: opendkim refuses a config or key
    file below a directory others can write (/tmp, even with the sticky
    bit), so they are copied into a root-owned tmpfs (OPENDKIM_NS_DIR);
    and it logs only through syslog(3) while this machine has no
    /dev/log, so that tmpfs, mounted on /dev, has a /dev/log whose lines
    land in its log file (LogWhy yes explains each sign/verify decision).
    The copies in .dir are what it reads.

    .milter_address, .port, .log, .key (the DkimKey used)."""

    def __init__(self, h, dns, domain=OUR_DOMAIN, selector=SELECTOR,
                 key=None, name="opendkim", macro_list="auth_authen",
                 internal_hosts="192.0.2.1", extra=None):
        require("opendkim")
        self.h = h
        self.dns = dns
        self.name = name
        self.dir = filter_dir(h, name)
        self.domain = domain
        self.selector = selector
        self.key = key or dns.keys[domain]
        self.macro_list = macro_list
        self.internal_hosts = internal_hosts
        self.extra = dict(extra or {})
        self.user = system_user("opendkim")
        self.port = None
        self.conf = os.path.join(self.dir, "opendkim.conf")
        self._sink = None

    @property
    def milter_address(self):
        return f"inet:{LOOPBACK}:{self.port}"

    def write_config(self):
        """opendkim.conf and libunbound.conf in .dir, naming the paths
        their copies get in the namespace."""
        ns = OPENDKIM_NS_DIR
        resolver = os.path.join(self.dir, "libunbound.conf")
        with open(resolver, "w") as f:
            # libunbound's do-not-query-localhost defaults to yes, which
            # drops the only forwarder, and its built-in local zones
            # (RFC 6761's test. and invalid. among them) would answer
            # NXDOMAIN for the test zones without asking.
            tlds = sorted({z.rstrip(".").rsplit(".", 1)[-1]
                           for z in self.dns.zones})
            f.write("server:\n  do-ip6: no\n  verbosity: 0\n"
                    "  do-not-query-localhost: no\n")
            for t in tlds:
                f.write(f'  local-zone: "{t}." nodefault\n')
            f.write('forward-zone:\n  name: "."\n'
                    f"  forward-addr: {LOOPBACK}@{self.dns.port}\n")
        opts = {
            "Syslog": "yes",
            "SyslogSuccess": "yes",
            "LogWhy": "yes",
            "LogResults": "yes",
            "Mode": "sv",
            "Socket": f"inet:{self.port}@{LOOPBACK}",
            "Domain": self.domain,
            "Selector": self.selector,
            "KeyFile": f"{ns}/signing.key",
            "Canonicalization": "relaxed/simple",
            "OversignHeaders": "From",
            "InternalHosts": self.internal_hosts,
            "MacroList": self.macro_list,
            "AlwaysAddARHeader": "yes",
            "AuthservID": "dkim.example.test",
            "ResolverConfiguration": f"{ns}/libunbound.conf",
            "DNSTimeout": "5",
            "UserID": f"{self.user}:{self.user}",
            "UMask": "022",
            "AutoRestart": "no",
            "Background": "no",
        }
        if not self.macro_list:
            del opts["MacroList"]
        opts.update(self.extra)
        with open(self.conf, "w") as f:
            f.write("# Written by tests/integration/filters.py\n")
            for k, v in opts.items():
                if v is not None:
                    f.write(f"{k}\t{v}\n")
        for p in (self.conf, resolver):
            os.chmod(p, 0o644)

    def start(self, ready_timeout=30.0):
        self.port = mtharness.free_port()
        self.write_config()
        ns = OPENDKIM_NS_DIR
        sock = os.path.join(self.dir, "log.sock")
        argv = _private_dev(sock, {
            self.conf: "opendkim.conf", self.key.private_key: "signing.key",
            os.path.join(self.dir, "libunbound.conf"): "libunbound.conf"},
            [have("opendkim"), "-f", "-x", f"{ns}/opendkim.conf"])
        self._sink = _SyslogSink(
            sock, os.path.join(self.h.tmpdir, f"{self.name}.log"))
        self._start_daemon(argv, ready_port=self.port,
                           ready_timeout=ready_timeout)
        wait_for("opendkim to answer OPTNEG",
                 lambda: milter_probe(LOOPBACK, self.port), ready_timeout,
                 self.daemon)
        return self

    def stop(self, timeout=15.0):
        """Stop it (libmilter notices SIGTERM at its next 5-second poll:
        this takes up to 5 s)."""
        try:
            super().stop(timeout)
        finally:
            if self._sink is not None:
                self._sink.close()
                self._sink = None

    def __exit__(self, exc_type, exc, tb):
        try:
            return super().__exit__(exc_type, exc, tb)
        finally:
            if self._sink is not None:
                self._sink.close()
                self._sink = None


def milter_probe(host, port, timeout=2.0):
    """True if host:port answers a milter OPTNEG (version 6) with one."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(struct.pack("!IcIII", 13, b"O", 6, 0x1FF, 0x1FFFFF))
            head = b""
            while len(head) < 5:
                chunk = s.recv(5 - len(head))
                if not chunk:
                    return False
                head += chunk
            return head[4:5] == b"O"
    except OSError:
        return False
