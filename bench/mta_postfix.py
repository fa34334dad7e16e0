"""mta_postfix.py -- a private Postfix instance for bench/mta.py, on loopback.

Postfix (the Debian package) in its own config_directory and queue under a
run directory, started with `postfix -c DIR start` and stopped with
`postfix -c DIR stop`: no postmulti, nothing in /etc/postfix touched. The
configuration is bench/specmail-peer's Postfix (conf-tuned or conf-defaults:
../shared/peers-tuned and ../shared/peers with ports and paths as @...@
placeholders), filled in here, then changed with `postconf -e` only where
the store and the directory are mailtier's instead of Dovecot and the
peers' own slapd:

  - recipients are checked at RCPT time in mailtier's slapd (postfix-ldap,
    as the peers check theirs), with mailtier-mta's filter:
    (&(objectClass=inetLocalMailRecipient)(|(mail=%s)(mailLocalAddress=%s)))
    bound as the mailtier service identity (the directory allows no
    anonymous reads);
  - each recipient goes by LMTP to the mailtier-popstore shard its entry's
    mailHost names, as mailtier-mta routes it: transport_maps =
    pipemap:{ldap (mailHost), inline:{s1=lmtp:inet:127.0.0.1:L1, ...}};
  - the remote domain is relayed to the same sink as mailtier-mta's
    (the peer template already does that);
  - alias_maps and alias_database empty (nothing is delivered locally; the
    peers' config leaves the defaults, and every new smtpd then logs an error
    for the missing /etc/aliases.db);
  - fsync: Postfix's own (the queue file is fsynced before the 250), as
    the stores fsync before their LMTP 250.

Run as root (Postfix's master starts as root and drops to `postfix`).
Trust boundary: a benchmark on loopback; the bind password is written to a
0640 root:postfix file in the run directory.
"""

import os
import shutil
import signal
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEER_DIR = os.path.join(HERE, "specmail-peer")
QUEUES = ("maildrop", "incoming", "active", "deferred", "hold", "corrupt")
HZ = os.sysconf("SC_CLK_TCK")


def _stat(pid):
    """(ppid, utime, stime, cutime, cstime, starttime) in ticks, or None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    f = s[s.rfind(")") + 2:].split()
    return int(f[1]), int(f[11]), int(f[12]), int(f[13]), int(f[14]), int(f[19])


class Postfix:
    def __init__(self, rundir, *, variant, smtp_port, ldap_uri, base_dn, bind_dn,
                 bind_pw, domain, remote_domain, sink_port, shards, log,
                 routing="ldap", dump_bind=None):
        """shards: {name: lmtp_port} (the mailHost values of the directory);
        routing: "ldap" (transport by mailHost at each lookup) or "hash" (a
        transport table written once from the directory's mail/mailHost,
        read as dump_bind = (dn, password), e.g. the directory's admin: the
        service identity has slapd's default size limit of 500 entries)."""
        self.v = rundir
        self.conf = os.path.join(rundir, "conf")
        self.spool = os.path.join(rundir, "spool")
        self.variant = variant
        self.smtp_port = smtp_port
        self.ldap_uri = ldap_uri
        self.base_dn = base_dn
        self.bind_dn = bind_dn
        self.bind_pw = bind_pw
        self.domain = domain
        self.remote_domain = remote_domain
        self.sink_port = sink_port
        self.shards = shards
        self.log = log                  # callable(str)
        self.routing = routing
        self.dump_bind = dump_bind or (bind_dn, bind_pw)
        self.logfile = os.path.join(rundir, "log", "postfix.log")
        self.master = None

    def _run(self, argv, timeout=120, check=True):
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        if check and p.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {p.returncode}: "
                               f"{p.stdout}{p.stderr}")
        return p.stdout

    def configure(self):
        """Write DIR/conf from the specmail-peer template; fresh spool."""
        tmpl = os.path.join(PEER_DIR, f"conf-{self.variant}", "postfix")
        if not os.path.isdir(tmpl):
            raise RuntimeError(f"no Postfix template {tmpl}")
        for d in (self.conf, self.spool):
            shutil.rmtree(d, ignore_errors=True)
        for d in (self.conf, self.spool, os.path.join(self.v, "log"),
                  os.path.join(self.v, "postfix-data")):
            os.makedirs(d, exist_ok=True)
        shutil.chown(os.path.join(self.v, "postfix-data"), "postfix")
        first_lmtp = next(iter(self.shards.values()))
        subst = {"@CONF@": self.conf, "@V@": self.v, "@DOMAIN@": self.domain,
                 "@REMOTE_DOMAIN@": self.remote_domain,
                 "@SINK_PORT@": str(self.sink_port), "@LDAP_PORT@": "0",
                 "@SMTP_PORT@": str(self.smtp_port), "@LMTP_PORT@": str(first_lmtp),
                 "@POP3_PORT@": "0", "@PROXY_PORT@": "0"}
        for name in ("main.cf", "master.cf"):
            with open(os.path.join(tmpl, name)) as f:
                text = f.read()
            for k, val in subst.items():
                text = text.replace(k, val)
            with open(os.path.join(self.conf, name), "w") as f:
                f.write(text)
        # mailtier's directory instead of the peers' (see the module comment)
        common = (f"# written by bench/mta_postfix.py: mailtier's slapd\n"
                  f"server_host = {self.ldap_uri}\nversion = 3\n"
                  f"search_base = {self.base_dn}\nscope = sub\n"
                  f"domain = {self.domain}\n"
                  "query_filter = (&(objectClass=inetLocalMailRecipient)"
                  "(|(mail=%s)(mailLocalAddress=%s)))\n"
                  f"bind = yes\nbind_dn = {self.bind_dn}\nbind_pw = {self.bind_pw}\n")
        for name, attr in (("ldap-users.cf", "mail"), ("ldap-shard.cf", "mailHost")):
            path = os.path.join(self.conf, name)
            with open(path, "w") as f:
                f.write(common + f"result_attribute = {attr}\n")
            os.chmod(path, 0o640)
            shutil.chown(path, "root", "postfix")
        shard_map = ", ".join(f"{s}=lmtp:inet:127.0.0.1:{p}"
                              for s, p in self.shards.items())
        self.shard_transport = (f"pipemap:{{ ldap:{self.conf}/ldap-shard.cf, "
                                f"inline:{{ {shard_map} }} }}")
        if self.routing == "hash":
            self.shard_transport = f"hash:{self.conf}/transport-shards"
            self._write_shard_table(os.path.join(self.conf, "transport-shards"))
        self._run(["postconf", "-c", self.conf, "-e",
                   f"virtual_mailbox_maps = ldap:{self.conf}/ldap-users.cf",
                   "virtual_transport = error:4.3.0 recipient without mailHost",
                   # no local delivery here: without these every new smtpd logs
                   # "open database /etc/aliases.db" (the peers' config does)
                   "alias_maps =", "alias_database =",
                   f"transport_maps = inline:{{ {self.remote_domain}="
                   f"relay:[127.0.0.1]:{self.sink_port} }}, {self.shard_transport}"])

    def _write_shard_table(self, path):
        """hash: table address -> lmtp:inet:127.0.0.1:PORT of its mailHost,
        from one paged search of the directory (the same data the LDAP
        routing reads at every lookup)."""
        out = self._run(["ldapsearch", "-x", "-LLL", "-o", "ldif-wrap=no",
                         "-H", self.ldap_uri, "-D", self.dump_bind[0],
                         "-w", self.dump_bind[1], "-b", self.base_dn,
                         "(objectClass=inetLocalMailRecipient)",
                         "mail", "mailLocalAddress", "mailHost"], timeout=300)
        lines = []
        for entry in out.split("\n\n"):
            addrs, host = [], None
            for line in entry.splitlines():
                k, _, v = line.partition(": ")
                if k in ("mail", "mailLocalAddress"):
                    addrs.append(v.strip())
                elif k == "mailHost":
                    host = v.strip()
            if host in self.shards:
                lines += [f"{a} lmtp:inet:127.0.0.1:{self.shards[host]}" for a in addrs]
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        self._run(["postmap", "-c", self.conf, f"hash:{path}"])
        self.log(f"postfix: transport table of {len(lines)} addresses from the directory")

    def check_routing(self, user):
        """Resolve one recipient through the maps: proves LDAP + routing work."""
        addr = f"{user}@{self.domain}"
        ok = self._run(["postmap", "-c", self.conf, "-q", addr,
                        f"ldap:{self.conf}/ldap-users.cf"], check=False).strip()
        tr = self._run(["postmap", "-c", self.conf, "-q", addr,
                        self.shard_transport], check=False).strip()
        return ok, tr

    def start(self):
        self._run(["postfix", "-c", self.conf, "check"], check=False)
        self._run(["postfix", "-c", self.conf, "start"])
        pidfile = os.path.join(self.spool, "pid", "master.pid")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with open(pidfile) as f:
                    self.master = int(f.read().split()[0])
                break
            except (OSError, ValueError, IndexError):
                time.sleep(0.2)
        if self.master is None:
            raise RuntimeError(f"postfix: no {pidfile} after 20 s (see {self.logfile})")

    def children(self):
        if self.master is None:
            return []
        kids = []
        for p in os.listdir("/proc"):
            if p.isdigit():
                st = _stat(int(p))
                if st and st[0] == self.master:
                    kids.append(int(p))
        return kids

    def cpu(self):
        """(user s, system s) of master, its live children, and the reaped
        ones (the master's cutime/cstime): deltas are the instance's CPU."""
        if self.master is None:
            return 0.0, 0.0
        st = _stat(self.master)
        if st is None:
            return 0.0, 0.0
        u, s = st[1] + st[3], st[2] + st[4]
        for k in self.children():
            c = _stat(k)
            if c and c[0] == self.master:
                u += c[1] + c[3]
                s += c[2] + c[4]
        return u / HZ, s / HZ

    def cpu_by_name(self):
        """{pid: (name, starttime, user+system ticks)} of the master and its
        live children; see cpu_split() for a step's breakdown."""
        snap = {}
        for pid in ([self.master] if self.master else []) + self.children():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    s = f.read()
            except OSError:
                continue
            name = s[s.find("(") + 1:s.rfind(")")]
            f = s[s.rfind(")") + 2:].split()
            snap[pid] = (name, int(f[19]), int(f[11]) + int(f[12]))
        return snap

    @staticmethod
    def cpu_split(before, after):
        """CPU seconds per process name between two cpu_by_name() snapshots,
        for processes alive at the second (children that exited in between
        are only in the master's reaped total)."""
        out = {}
        for pid, (name, start, ticks) in after.items():
            b = before.get(pid)
            base = b[2] if b is not None and b[1] == start else 0
            out[name] = round(out.get(name, 0) + (ticks - base) / HZ, 2)
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def queue_size(self):
        """Messages in Postfix's queues (one file each)."""
        n = 0
        for q in QUEUES:
            for _root, _dirs, files in os.walk(os.path.join(self.spool, q)):
                n += len(files)
        return n

    def flush(self):
        self._run(["postqueue", "-c", self.conf, "-f"], check=False, timeout=60)

    def stop(self):
        if self.master is None:
            return
        kids = [(k, (_stat(k) or (0,) * 6)[5]) for k in self.children()]
        master = (self.master, (_stat(self.master) or (0,) * 6)[5])
        try:
            self._run(["postfix", "-c", self.conf, "stop"], check=False, timeout=60)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _stat(self.master) is not None:
            time.sleep(0.2)
        for pid, started in [master] + kids:
            st = _stat(pid)
            # only our own processes: the same pid and start time as before the stop
            if st is not None and st[5] == started:
                self.log(f"postfix: pid {pid} still alive after stop: SIGKILL")
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        self.master = None
