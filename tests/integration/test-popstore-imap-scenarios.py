#!/usr/bin/env python3
"""test-popstore-imap-scenarios.py -- scenario transcripts against a live
mailtier-popstore (and a real slapd): each scenario of
tests/integration/imap-scenarios.txt is a fresh connection whose client
lines are sent as they are and whose server lines must come back as
written, most of them RFC 9051's own examples (section 6), adapted to
this server's "/" delimiter and to what RFC 9051 leaves to the server
(human-readable text, UIDVALIDITY, dates).

The file's lines:
  == title            a scenario: a new connection, a new user
  D: n                deliver n messages to the user first (LMTP)
  L:                  log in (LOGIN) as the user, the OK consumed
  C: line             sent, with CRLF (<USER> and <PASS> replaced)
  C+ line             with a literal: the following M: lines, joined by
                      CRLF, sent as {n+} after line
  M: line             a line of that literal
  S: pattern          the next server line matches ('*' any text)
  S~ pattern          a block of S~ lines matches the next as many
                      server lines, in any order
  # ...               a comment
"""

import os
import re

import mtharness
import popstorelib

D = popstorelib.DOMAIN
PW = "scenario-pw-1"
HERE = os.path.dirname(os.path.abspath(__file__))


def glob(pattern):
    return re.compile("".join(".*" if part == "*" else re.escape(part)
                              for part in re.split(r"(\*)", pattern)) + r"\Z", re.S)


def parse(path):
    scenarios, cur = [], None
    for n, raw in enumerate(open(path, encoding="utf-8"), 1):
        line = raw.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        if line.startswith("== "):
            cur = {"title": line[3:], "line": n, "steps": [], "deliver": 0, "login": False}
            scenarios.append(cur)
            continue
        kind, _, text = line[:2], line[2:3], line[3:]
        assert cur is not None, f"{path}:{n}: a step before the first scenario"
        if kind == "D:":
            cur["deliver"] = int(text)
        elif kind == "L:":
            cur["login"] = True
        elif kind == "M:" and cur["steps"] and cur["steps"][-1][0] == "C+":
            cur["steps"][-1][3].append(text)
        elif kind in ("C:", "S:", "S~"):
            cur["steps"].append((kind, n, text))
        elif kind == "C+":
            cur["steps"].append((kind, n, text, []))
        else:
            raise AssertionError(f"{path}:{n}: unknown line {line!r}")
    return scenarios


def message(i):
    return (f"Date: Mon, 7 Feb 1994 21:52:2{i} -0800\r\n"
            f"From: Fred Foobar <foobar@Blurdybloop.example>\r\n"
            f"Subject: message {i}\r\n"
            f"To: mooch@owatagu.example\r\n"
            f"Message-Id: <B27397-010000{i}@Blurdybloop.example>\r\n"
            f"\r\n"
            f"Hello Joe, message {i}.\r\n").encode()


def run(env, sc, user, path):
    for i in range(1, sc["deliver"] + 1):
        rr, dr = env.deliver("s1", "x@remote.test", [user], message(i))
        assert dr[0][0] == 250, dr
    sock = env.raw("s1", proto="imap")
    sock.settimeout(15)
    f = sock.makefile("rb")
    greeting = f.readline()
    assert greeting.startswith(b"* OK"), greeting

    def send(text):
        sock.sendall(text.replace("<USER>", user).replace("<PASS>", PW).encode() + b"\r\n")

    if sc["login"]:
        send("L0 LOGIN <USER> <PASS>")
        got = f.readline()
        assert got.startswith(b"L0 OK"), got
    steps = sc["steps"]
    i = 0
    while i < len(steps):
        kind, n = steps[i][0], steps[i][1]
        where = f"{path}:{n} ({sc['title']})"
        if kind == "C:":
            send(steps[i][2])
            i += 1
        elif kind == "C+":
            body = "\r\n".join(steps[i][3]) + "\r\n"
            send(f"{steps[i][2]} {{{len(body.encode())}+}}\r\n{body}")
            i += 1
        elif kind == "S:":
            got = f.readline().decode("utf-8", "replace").rstrip("\r\n")
            assert glob(steps[i][2]).match(got), f"{where}: got {got!r}, want {steps[i][2]!r}"
            i += 1
        else:   # an S~ block
            block = []
            while i < len(steps) and steps[i][0] == "S~":
                block.append(steps[i])
                i += 1
            lines = [f.readline().decode("utf-8", "replace").rstrip("\r\n") for _ in block]
            left = list(lines)
            for _, n2, pattern in block:
                hit = next((l for l in left if glob(pattern).match(l)), None)
                assert hit is not None, f"{path}:{n2} ({sc['title']}): none of {left!r} is {pattern!r}"
                left.remove(hit)
    sock.close()


def test(h):
    path = os.path.join(HERE, "imap-scenarios.txt")
    scenarios = parse(path)
    env = popstorelib.Env(h, shards=("s1",), popstore_extra="allow_plaintext_auth = yes\n")
    users = [f"sc{i}@{D}" for i in range(len(scenarios))]
    for u in users:
        env.add_user(u, PW)
    env.start("s1")
    for sc, user in zip(scenarios, users):
        run(env, sc, user, path)
    print(f"{len(scenarios)} scenarios, "
          f"{sum(len(s['steps']) for s in scenarios)} steps passed")


if __name__ == "__main__":
    mtharness.main(test)
