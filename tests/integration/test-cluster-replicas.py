#!/usr/bin/env python3
"""test-cluster-replicas.py -- `mailtierctl cluster up --replicas 3`: every
shard a Berkeley DB replication group of three store sites on loopback
(shardN, shardN-b, shardN-c; HA.md §5.1, README "Running a shard
on three hosts"), and what an operator sees of it.

Without daemons: `--replicas 2` is refused with its reason (two sites
cannot keep a quorum), as is any count but 1 and 3; a cluster made with
one count refuses another; `cluster status --json` names every site with
its shard and data directory.

With a store that replicates (mailtier-popstore --create-group; skipped
before): the generated config passes `mailtierctl config check` (which
warns, still ok, for a replication_listen on a public address); only the
first site of each shard starts with --create-group; `cluster status
--json` shows one master and two replicas per shard; mail goes in over
SMTP and out through the MMP, after which every replica shows 0 bytes of
log behind its master (lag_bytes, and the text status); kill -9 of shard1's master: another site is
master within 15 s and the mail is still there, and new mail arrives;
a real Prometheus scrapes every site with the prometheus.yml `up` wrote,
reads every metric the shipped alert rules use, counts one master a shard
and has no alert pending;
`mailtierctl store stat` reads the running new master and refuses the
killed site (it would recover a replicated environment without its daemon);
after `cluster down` and `up`, every shard elects a master again and the
mail is all there;
`cluster up` again restarts the killed site as a replica; killed again
and its data directory wiped, `cluster up` brings it back (no
--create-group) as a replica by a full copy; `cluster down` stops all."""

import importlib.util
import json
import os
import poplib
import re
import shutil
import signal
import smtplib
import subprocess
import time

import monitoring
import mtharness

SHARDS = 2
# cluster_last_port: P .. P+14+15S-1 with three sites a shard.
PORTS = 14 + 15 * SHARDS
SITES = ("", "-b", "-c")


def wait_for(what, fn, timeout=30.0, every=0.2):
    start = time.monotonic()
    while True:
        value = fn()
        if value:
            return time.monotonic() - start, value
        if time.monotonic() - start > timeout:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(every)


def status_json(h, d):
    """{name: entry} of `cluster status --json` (its exit status is
    non-zero while a daemon is down: not checked)."""
    p = h.ctl("cluster", "status", "--dir", d, "--json", check=False)
    doc = json.loads(p.stdout)
    assert set(doc) >= {"daemons"}, doc
    return {e["name"]: e for e in doc["daemons"]}


def shard_roles(daemons, n):
    return {f"shard{n}{s}": daemons[f"shard{n}{s}"]["role"] for s in SITES}


def settled(daemons, n):
    """The shard's master site when it has exactly one master and two
    replicas that are in sync, each site connected to the other two, else
    None. (A site's connections show in its metrics a moment after its
    role: repmgr makes one each way, retried every 2 s.)"""
    roles = shard_roles(daemons, n)
    masters = [k for k, r in roles.items() if r == "master"]
    replicas = [k for k, r in roles.items() if r == "replica"
                and daemons[k].get("startup_done", True)]
    connected = all(daemons[k].get("connected_sites") == 2 for k in roles)
    if len(masters) == 1 and len(replicas) == 2 and connected:
        return masters[0]
    return None


def cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().split(b"\0")


def mailhost(h, conf, addr):
    p = h.ctl("users", "show", addr, config=conf)
    return re.search(r"^mailHost: (\S+)$", p.stdout, re.M).group(1)


def send(port, rcpt, subject):
    with smtplib.SMTP("127.0.0.1", port, timeout=30) as s:
        s.sendmail("sender@remote.test", [rcpt],
                   f"From: <sender@remote.test>\r\nTo: <{rcpt}>\r\n"
                   f"Subject: {subject}\r\n\r\nreplicated\r\n")


def subjects(port, user, password):
    """Subjects in user's mailbox through the MMP's POP3; None while the
    login fails (the shard has no master yet)."""
    try:
        p = poplib.POP3("127.0.0.1", port, timeout=20)
        p.user(user)
        p.pass_(password)
        found = []
        for i in range(1, p.stat()[0] + 1):
            for line in p.top(i, 0)[1]:
                if line.lower().startswith(b"subject: "):
                    found.append(line[9:].decode())
        p.quit()
        return found
    except (poplib.error_proto, OSError):
        return None


def has_subjects(port, user, password, want):
    got = subjects(port, user, password)
    return got is not None and set(want) <= set(got)


def prometheus_checks(h, d, daemons):
    """A real Prometheus with DIR/prometheus.yml: one job a shard with a
    target a site; every metric the shipped rules read is exported (the
    replication ones too, which a shard of one site has not); each shard
    counts one master as the alert rules count it; the rules are healthy
    and none is pending on this healthy cluster. Skipped without
    /usr/bin/prometheus."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "test-metrics-prometheus.py")
    spec = importlib.util.spec_from_file_location("metrics_prometheus", path)
    mp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mp)
    if not os.access(mp.PROMETHEUS, os.X_OK):
        print(f"{mp.PROMETHEUS} is not installed: no Prometheus check")
        return
    port = mtharness.free_port()
    prom = h.start("prometheus", [mp.PROMETHEUS,
                                  "--config.file=" + os.path.join(d, "prometheus.yml"),
                                  "--storage.tsdb.path=" + os.path.join(h.tmpdir, "tsdb"),
                                  f"--web.listen-address=127.0.0.1:{port}",
                                  "--log.level=warn"],
                   notify=False, ready_port=port, ready_timeout=30)
    try:
        api = mp.Api(port)
        mp.wait_for("Prometheus ready", api.ready, 30)
        targets = mp.wait_for("every target up", lambda: mp.all_targets_up(api), 60)
        sites = sorted((t["labels"]["job"], t["labels"].get("site"), t["labels"]["instance"])
                       for t in targets if t["labels"]["job"].startswith("shard"))
        assert sites == sorted((f"shard{n}", f"shard{n}{s}",
                                f"127.0.0.1:{daemons[f'shard{n}{s}']['ports']['metrics']}")
                               for n in (1, 2) for s in SITES), sites
        exported = set(api.get("label/__name__/values"))
        rules = open(monitoring.RULES).read()
        for expr in re.findall(r"expr: (.+(?:\n {10}.+)*)", rules):
            for name in monitoring.metric_names(expr):
                if name.startswith("mailtier_store_"):
                    assert name in exported, (expr, name)
        masters = api.query('sum by (job) (mailtier_store_replication_role{role="master"})')
        assert sorted((m["metric"]["job"], m["value"][1]) for m in masters) == \
            [("shard1", "1"), ("shard2", "1")], masters
        # Until every site has been scraped once, a shard's master may be
        # missing from an evaluation: MailtierShardNoMaster pending then is
        # right (a master that does not answer is one); it must clear at
        # the next evaluation (every 5 s) and stay clear.
        mp.wait_for("no alert pending once every site is scraped",
                    lambda: not api.get("alerts")["alerts"], 30)
        mp.check_rules(api)
    finally:
        prom.stop(expect=None)


def offline_checks(h):
    """What needs no daemon: option checks and the recorded count."""
    d = os.path.join(h.tmpdir, "offline")
    p = h.ctl("cluster", "up", "--dir", d, "--replicas", 2, check=False)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "--replicas 2: two sites cannot keep a quorum" in p.stderr, p.stderr
    assert "use --replicas 3" in p.stderr, p.stderr
    assert not os.path.exists(d), "a refused --replicas must create nothing"
    for bad in (0, 4):
        p = h.ctl("cluster", "up", "--dir", d, "--replicas", bad, check=False)
        assert p.returncode == 2 and "--replicas: " in p.stderr, p.stderr

    # A cluster recorded with three sites a shard: another count is refused
    # before anything starts; status lists every site.
    os.makedirs(d)
    with open(os.path.join(d, "endpoints.env"), "w") as f:
        f.write("SHARDS=2\nUSERS=5\nBASE_PORT=1100\nDOMAIN=example.test\n"
                "REMOTE_DOMAIN=remote.test\nSINK=127.0.0.1:1109\nREPLICAS=3\n")
    p = h.ctl("cluster", "up", "--dir", d, "--replicas", 1, check=False)
    assert p.returncode != 0 and "made with another --replicas" in p.stderr, p.stderr
    daemons = status_json(h, d)
    assert list(daemons) == ["slapd", "shard1", "shard1-b", "shard1-c", "shard2",
                             "shard2-b", "shard2-c", "mta", "mmp"], list(daemons)
    for n in (1, 2):
        for s in SITES:
            e = daemons[f"shard{n}{s}"]
            assert e["shard"] == f"shard{n}" and e["kind"] == "store", e
            assert e["data_dir"] == os.path.join(d, f"store-shard{n}{s}"), e
            assert e["pid"] is None and e["state"] == "stopped" and e["role"] is None, e
            assert set(e["ports"]) == {"lmtp", "pop3", "imap", "repl", "metrics"}, e
    assert daemons["mta"]["role"] == "mta" and "shard" not in daemons["mta"]
    # Every port once, within P .. P+14+15S-1, for a few shard counts up
    # to the most (40), with and without the extra directory providers.
    for shards in (1, 2, 7, 40):
        for providers in (1, 3):
            with open(os.path.join(d, "endpoints.env"), "w") as f:
                f.write(f"SHARDS={shards}\nUSERS=5\nBASE_PORT=1100\nDOMAIN=example.test\n"
                        "REMOTE_DOMAIN=remote.test\nSINK=127.0.0.1:1109\nREPLICAS=3\n"
                        f"DIRECTORY_PROVIDERS={providers}\n")
            daemons = status_json(h, d)
            assert len(daemons) == 2 + providers + 3 * shards, list(daemons)
            ports = [p for e in daemons.values() for p in e["ports"].values()]
            ports += [1108, 1109]       # rspamd's milter, the sink
            assert len(ports) == len(set(ports)), (shards, providers, "a port used twice")
            assert max(ports) == 1100 + 14 + 15 * shards - 1, (shards, max(ports))


def replicates():
    p = subprocess.run([mtharness.binary("popstore/mailtier-popstore"), "--help"],
                       capture_output=True, text=True, timeout=30)
    return "--create-group" in p.stdout + p.stderr


def test(h):
    offline_checks(h)
    if not replicates():
        raise mtharness.Skip("mailtier-popstore has no --create-group yet: the "
                             "offline checks passed, the live part needs the store's "
                             "replication (#38)")

    d = os.path.join(h.tmpdir, "cluster")
    base = mtharness.free_port_block(PORTS)
    h.add_cleanup(lambda: h.ctl("cluster", "down", "--dir", d, check=False))
    up = h.ctl("cluster", "up", "--dir", d, "--base-port", base, "--users", 20,
               "--shards", SHARDS, "--replicas", 3)
    print(up.stdout)
    env = mtharness.read_env(os.path.join(d, "endpoints.env"))
    conf = env["CONF"]
    assert env["REPLICAS"] == "3" and env["SHARD1_SITES"] == "shard1,shard1-b,shard1-c", env
    assert h.ctl("config", "check", config=conf).stdout == "ok\n"
    text = open(conf).read()
    # The same sites with replication on a public address: a warning per
    # site, still ok; on a private network none.
    for addr, warned in (("198.51.100.7", 6), ("10.1.0.11", 0)):
        other = os.path.join(h.tmpdir, f"repl-{addr}.conf")
        with open(other, "w") as f:
            f.write(re.sub(r"^(replication_(?:listen|sites) =.*)$",
                           lambda m: m.group(1).replace("127.0.0.1:", addr + ":"),
                           text, flags=re.M))
        out = h.ctl("config", "check", config=other).stdout
        assert out.count(": warning: [popstore.shard") == warned, out
        assert out.endswith("ok\n" if warned == 0 else f"ok, with {warned} warnings\n"), out
        if warned:
            assert re.search(rf"^{re.escape(other)}:\d+: warning: \[popstore.shard1-b\] "
                             rf"replication_listen {addr}:\d+ is not a private address",
                             out, re.M), out
    assert re.search(r"^shard1 = [^|\n]+ \| [^|\n]+ \| [^|\n]+$", text, re.M), text
    for n in (1, 2):
        assert f"created shard{n}'s replication group" in up.stdout, up.stdout
        assert re.search(rf"^shard{n} +master is shard{n}(-[bc])? \(", up.stdout, re.M), up.stdout

    # Only the first site of each shard founded its group.
    daemons = status_json(h, d)
    for n in (1, 2):
        for s in SITES:
            e = daemons[f"shard{n}{s}"]
            assert (b"--create-group" in cmdline(e["pid"])) == (s == ""), (e, s)

    # One master, two replicas a shard.
    took, daemons = wait_for("one master and two replicas in each shard", lambda: (
        lambda ds: ds if all(settled(ds, n) for n in (1, 2)) else None)(status_json(h, d)))
    print(f"roles settled {took:.1f} s after `cluster up` returned:",
          {n: shard_roles(daemons, n) for n in (1, 2)})
    for n in (1, 2):
        master = settled(daemons, n)
        for s in SITES:
            e = daemons[f"shard{n}{s}"]
            assert e["master"] == master, e
            assert e["sites"] == 3 and e["connected_sites"] == 2, e
    prometheus_checks(h, d, daemons)
    st = h.ctl("cluster", "status", "--dir", d)
    assert re.search(r"^ +replication: role master, master shard1", st.stdout, re.M) or \
        re.search(r"^ +replication: role master, master shard1-[bc]", st.stdout, re.M), st.stdout
    assert st.stdout.count("replication: role replica") == 4, st.stdout

    # Mail for a user of shard1 goes in by SMTP and out through the MMP.
    user = next(f"user{k}@example.test" for k in range(1, 21)
                if mailhost(h, conf, f"user{k}@example.test") == "shard1")
    password = "secret" + re.match(r"user(\d+)@", user).group(1)
    smtp, pop3 = int(env["SMTP_PORT"]), int(env["POP3_PORT"])
    for i in range(3):
        send(smtp, user, f"before {i}")
    wait_for(f"{user}'s mail", lambda: has_subjects(pop3, user, password,
                                                     [f"before {i}" for i in range(3)]))
    # Each replica's lag: its master's log position less its own, 0 once
    # it has applied the mail (positions are read every second).
    took, daemons = wait_for("every replica 0 bytes of log behind", lambda: (
        lambda ds: ds if all(ds[f"shard{n}{s}"].get("lag_bytes") == 0
                             for n in (1, 2) for s in SITES
                             if ds[f"shard{n}{s}"]["role"] == "replica") else None)(
                                 status_json(h, d)))
    for n in (1, 2):
        m = settled(daemons, n)
        assert daemons[m]["log_position"] > 0 and "lag_bytes" not in daemons[m], daemons[m]
    st = h.ctl("cluster", "status", "--dir", d)
    assert st.stdout.count(", 0 bytes of log behind") == 4, st.stdout

    # kill -9 of shard1's master: another site takes over.
    old = settled(daemons, 1)
    old_pid = daemons[old]["pid"]
    os.kill(old_pid, signal.SIGKILL)
    took, new = wait_for("another master of shard1", lambda: (
        lambda ds: next((k for k, r in shard_roles(ds, 1).items()
                         if r == "master" and k != old), None))(status_json(h, d)),
        timeout=15.0)
    print(f"{old} (pid {old_pid}) killed: {new} master after {took:.1f} s")
    # mailtierctl reads a running site, never recovers a stopped one.
    p = h.ctl("store", "stat", new, config=conf)
    assert f"shard: {new}\n" in p.stdout, p.stdout
    wait_for(f"{old} gone", lambda: not os.path.exists(f"/proc/{old_pid}"))
    p = h.ctl("store", "stat", old, config=conf, check=False)
    assert p.returncode != 0 and "is not running" in p.stderr, (p.stdout, p.stderr)
    wait_for("the mail on the new master", lambda: has_subjects(
        pop3, user, password, [f"before {i}" for i in range(3)]))
    send(smtp, user, "after failover")
    took, _ = wait_for("mail after the failover", lambda: has_subjects(
        pop3, user, password, ["after failover"]), timeout=60)
    print(f"mail after the failover arrived in {took:.1f} s")

    # `cluster up` again: only the killed site starts, as a replica.
    again = h.ctl("cluster", "up", "--dir", d)
    assert re.search(rf"^{re.escape(old)} +ready \(pid \d+\)$", again.stdout, re.M), again.stdout
    assert "created" not in again.stdout, again.stdout
    took, daemons = wait_for(f"{old} back as a replica", lambda: (
        lambda ds: ds if settled(ds, 1) == new and ds[old]["role"] == "replica"
        else None)(status_json(h, d)))
    print(f"{old} back as a replica {took:.1f} s after `cluster up` returned")

    # Its host and disk lost: killed, data wiped; `cluster up` rebuilds it
    # from the group (a full copy), never with --create-group.
    os.kill(daemons[old]["pid"], signal.SIGKILL)
    home = daemons[old]["data_dir"]
    wait_for(f"{old} gone", lambda: not os.path.exists(f"/proc/{daemons[old]['pid']}"))
    shutil.rmtree(home)
    send(smtp, user, "while wiped")
    wait_for("mail with a site wiped", lambda: has_subjects(
        pop3, user, password, ["while wiped"]), timeout=60)
    again = h.ctl("cluster", "up", "--dir", d)
    assert "created" not in again.stdout, again.stdout
    took, daemons = wait_for(f"{old} rebuilt as a replica", lambda: (
        lambda ds: ds if settled(ds, 1) == new and ds[old]["role"] == "replica"
        else None)(status_json(h, d)), timeout=60)
    assert b"--create-group" not in cmdline(daemons[old]["pid"])
    assert daemons[old]["internal_inits"] >= 1, daemons[old]
    assert os.listdir(home), home
    print(f"{old} rebuilt by a full copy, a replica {took:.1f} s after `cluster up`")
    assert has_subjects(pop3, user, password,
                        [f"before {i}" for i in range(3)] + ["after failover", "while wiped"])

    # The whole cluster stopped and started again: every site of a shard
    # starts at once (none could win an election alone), a master is
    # elected before the MTA and the MMP start, and the mail is there.
    h.ctl("cluster", "down", "--dir", d)
    assert all(e["pid"] is None for e in status_json(h, d).values())
    again = h.ctl("cluster", "up", "--dir", d)
    assert "created" not in again.stdout, again.stdout
    for n in (1, 2):
        m = re.search(rf"^shard{n} +master is (\S+) \(([0-9.]+) s\)$", again.stdout, re.M)
        assert m, again.stdout
        print(f"after a whole-cluster restart shard{n}'s master is {m.group(1)} "
              f"({m.group(2)} s after its sites were ready)")
    assert has_subjects(pop3, user, password,
                        [f"before {i}" for i in range(3)] + ["after failover", "while wiped"])
    _, daemons = wait_for("one master and two replicas in each shard after the restart",
                          lambda: (lambda ds: ds if all(settled(ds, n) for n in (1, 2))
                                   else None)(status_json(h, d)))

    h.ctl("cluster", "down", "--dir", d)
    assert all(e["pid"] is None for e in status_json(h, d).values())
    for e in daemons.values():
        if e["pid"] is not None:
            wait_for(f"{e['name']} gone", lambda: not os.path.exists(f"/proc/{e['pid']}"),
                     timeout=10)


if __name__ == "__main__":
    mtharness.main(test)
