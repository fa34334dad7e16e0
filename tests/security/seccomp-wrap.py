#!/usr/bin/env python3
"""seccomp-wrap.py -- run a program under a seccomp deny list, the way a
systemd unit's "SystemCallFilter=~@group ..." (with
SystemCallErrorNumber=EPERM) does: each listed system call fails with
EPERM, everything else is allowed. The filter is installed in this
process, which then exec()s the program (same pid, so sd_notify still
comes from the "main" process).

    seccomp-wrap.py '@privileged @resources' PROGRAM ARGS...

The groups are expanded by `systemd-analyze syscall-filter`, so the list
is exactly the one systemd would use. libseccomp (Debian libseccomp2) is
called through ctypes.

Trust boundary: test code only."""

import ctypes
import ctypes.util
import errno
import os
import subprocess
import sys

SCMP_ACT_ALLOW = 0x7fff0000


def scmp_act_errno(e):
    return 0x00050000 | (e & 0xffff)


def expand(groups, seen=None):
    """The system calls of the groups, nested groups (@chown in
    @privileged) included."""
    seen = set() if seen is None else seen
    names = set()
    for g in groups.split():
        if g in seen:
            continue
        seen.add(g)
        out = subprocess.run(["systemd-analyze", "syscall-filter", g],
                             capture_output=True, text=True, check=True).stdout
        for line in out.splitlines()[1:]:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("@"):
                names |= expand(line, seen)
            else:
                names.add(line)
    return names


def main():
    groups, argv = sys.argv[1], sys.argv[2:]
    lib = ctypes.CDLL(ctypes.util.find_library("seccomp") or "libseccomp.so.2")
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32,
                                     ctypes.c_int, ctypes.c_uint]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        sys.exit("seccomp_init failed")
    count = 0
    for name in sorted(expand(groups)):
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:
            continue            # not a system call on this architecture
        if lib.seccomp_rule_add(ctx, scmp_act_errno(errno.EPERM), nr, 0) == 0:
            count += 1
    if lib.seccomp_load(ctx) != 0:
        sys.exit("seccomp_load failed")
    print(f"seccomp-wrap: {count} system calls denied ({groups})",
          file=sys.stderr, flush=True)
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
