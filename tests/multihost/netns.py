"""netns -- hosts as network namespaces on one machine, for the multi-host
tests: each host a namespace with one veth per network it is on, each
network a Linux bridge inside one more namespace of the test's own, so
nothing touches the machine's interfaces or routes, and parallel runs
(namespace names carry the pid) do not clash. A host's cable can be
pulled at its bridge (`link(role, "down", network)`): its peers then see
silence, no FIN or RST, as at a power cut or a broken switch port.

    net = netns.setup(h, {"ldap": {"svc": "10.213.0.10"},
                          "s1a": {"svc": "10.213.0.11", "repl": "10.214.0.11"}},
                      "mtmh")     # skips unless root; torn down at the end
    subprocess.run(net.exec_argv("s1a") + ["mailtier-popstore", ...])
    with net.inside("gen"): smtplib.SMTP(...)     # a socket of host gen

Trust boundary: test code only (run as root; skipped otherwise)."""

import contextlib
import ctypes
import os
import re
import shutil
import subprocess

import mtharness

PREFIX = 24
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def ip_tool():
    return shutil.which("ip", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin:/bin")


class Network:
    """The namespaces, bridges and veth pairs of one run. hosts: role ->
    {network: address}; the first network listed anywhere is the default
    for link() and port()."""

    def __init__(self, h, hosts, tag):
        self.h = h
        self.ip = ip_tool()
        self.hosts = hosts
        self.tag = tag
        self.bridge_ns = f"{tag}-br"
        self.ns = {role: f"{tag}-{role}" for role in hosts}
        self.networks = []
        for nets in hosts.values():
            for n in nets:
                if n not in self.networks:
                    self.networks.append(n)
        self.created = []

    def run(self, *args, check=True):
        p = subprocess.run([self.ip] + [str(a) for a in args],
                           capture_output=True, text=True, timeout=30)
        self.h.note(f"ip {' '.join(str(a) for a in args)} -> {p.returncode}")
        if check and p.returncode != 0:
            raise mtharness.HarnessError(f"ip {' '.join(map(str, args))}: "
                                         f"{p.stderr.strip()}")
        return p

    def add_ns(self, name):
        p = self.run("netns", "add", name, check=False)
        if p.returncode != 0:
            if not self.created:    # the first one: no netns support here
                raise mtharness.Skip(f"`ip netns add` failed: {p.stderr.strip()}")
            raise mtharness.HarnessError(f"ip netns add {name}: {p.stderr.strip()}")
        self.created.append(name)

    def bridge(self, network):
        return f"br{self.networks.index(network)}"

    def up(self):
        """Create everything; self.teardown() undoes what was made."""
        self.add_ns(self.bridge_ns)
        br = self.bridge_ns
        self.run("-n", br, "link", "set", "lo", "up")
        for network in self.networks:
            self.run("-n", br, "link", "add", self.bridge(network), "type", "bridge")
            self.run("-n", br, "link", "set", self.bridge(network), "up")
        for role, nets in self.hosts.items():
            ns = self.ns[role]
            self.add_ns(ns)
            self.run("-n", ns, "link", "set", "lo", "up")
            for network, addr in nets.items():
                # Both ends are made inside namespaces of ours: the bridge
                # side in the bridge namespace, the host side moved at once.
                dev = f"eth{self.networks.index(network)}"
                port = self.port(role, network)
                self.run("-n", br, "link", "add", port, "type", "veth",
                         "peer", "name", dev, "netns", ns)
                self.run("-n", br, "link", "set", port, "master", self.bridge(network))
                self.run("-n", br, "link", "set", port, "up")
                self.run("-n", ns, "addr", "add", f"{addr}/{PREFIX}", "dev", dev)
                self.run("-n", ns, "link", "set", dev, "up")

    def port(self, role, network=None):
        """The bridge side of role's veth on network (the default: the
        first network)."""
        i = self.networks.index(network or self.networks[0])
        return f"v-{role}" if i == 0 else f"v{i}-{role}"

    def link(self, role, state, network=None):
        """Pull (down) or plug back (up) role's cable at the bridge."""
        self.run("-n", self.bridge_ns, "link", "set", self.port(role, network), state)

    def exec_argv(self, role):
        return [self.ip, "netns", "exec", self.ns[role]]

    def teardown(self):
        # Deleting a namespace removes its veth (and its peer) with it.
        for name in reversed(self.created):
            self.run("netns", "del", name, check=False)
        self.created = []

    @contextlib.contextmanager
    def inside(self, role):
        """Run the block with this thread in role's network namespace:
        sockets made in it belong to that host."""
        with open("/proc/thread-self/ns/net") as home, \
                open(f"/run/netns/{self.ns[role]}") as there:
            if _libc.setns(there.fileno(), CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), f"setns {self.ns[role]}")
            try:
                yield
            finally:
                if _libc.setns(home.fileno(), CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), "setns back")


def remove_stale_namespaces(net, tag_prefix):
    """Namespaces left by a run that was killed (its pid is gone)."""
    p = net.run("netns", "list", check=False)
    for line in p.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.fullmatch(tag_prefix + r"(\d+)-\w+", name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            net.run("netns", "del", name, check=False)


def setup(h, hosts, tag_prefix):
    """The usual start of a multi-host test: skipped (77) unless root with
    ip(8) and slapd; namespaces left by killed runs removed; the network
    of this run (tag_prefix and the pid) made, its teardown registered
    first so that it runs last, after the daemons and slapd are stopped."""
    if os.geteuid() != 0:
        raise mtharness.Skip("needs root (network namespaces)")
    if ip_tool() is None:
        raise mtharness.Skip("no `ip` command (Debian package iproute2)")
    if shutil.which("slapd", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") is None:
        raise mtharness.Skip("slapd is not installed (Debian package slapd)")
    net = Network(h, hosts, f"{tag_prefix}{os.getpid()}")
    remove_stale_namespaces(net, tag_prefix)
    h.add_cleanup(net.teardown)
    net.up()
    return net
