#!/usr/bin/env python3
"""genldif.py N DOMAIN -- LDIF for the specmail peer's slapd: users user1..userN
(uid userK, mail userK@DOMAIN, userPassword secretK in plain text, as the
reference peers keep it), the naming mailtier-load and `mailtierctl users
bulk` use, so the same `mailtier-load` flags drive both systems.
Adapted from ../../shared/peers-tuned/genldif.py (user0000.., pw0000..)."""
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
domain = sys.argv[2] if len(sys.argv) > 2 else "example.test"
out = sys.stdout
out.write("dn: dc=bench,dc=test\nobjectClass: dcObject\nobjectClass: organization\no: bench\ndc: bench\n\n")
out.write("dn: ou=people,dc=bench,dc=test\nobjectClass: organizationalUnit\nou: people\n\n")
for k in range(1, n + 1):
    u = f"user{k}"
    out.write(f"dn: uid={u},ou=people,dc=bench,dc=test\nobjectClass: inetOrgPerson\nuid: {u}\ncn: {u}\nsn: {u}\n"
              f"mail: {u}@{domain}\nuserPassword: secret{k}\n\n")
