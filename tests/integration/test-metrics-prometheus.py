#!/usr/bin/env python3
"""test-metrics-prometheus.py -- a real Prometheus (Debian's
/usr/bin/prometheus) scraping a cluster started by `mailtierctl cluster
up`, with the DIR/prometheus.yml that `up` wrote and nothing changed in it:
every daemon is a target (mta, mmp, shard1, shard2) and every target is
up; the MTA's queue gauge has a numeric value and its accepted counter
equals the messages sent here with smtplib; the shipped alert rules are
loaded (every group, every rule healthy, every alert with a severity and
its annotations); every PromQL expression of the shipped Grafana dashboard
runs, and every metric the dashboard and the rules read is one the daemons
export. Skips only
when /usr/bin/prometheus is missing (scripts/install-deps installs it)."""

import json
import os
import re
import smtplib
import time
import urllib.error
import urllib.parse
import urllib.request

import monitoring
import mtharness

PROMETHEUS = "/usr/bin/prometheus"
MESSAGES = 3


class Api:
    """Prometheus's HTTP API on 127.0.0.1:port."""

    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}/api/v1/"

    def get(self, path, **params):
        url = self.base + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                body = json.load(r)
        except urllib.error.HTTPError as e:     # 400 for a bad query: say why
            raise AssertionError(f"{url}: {e.code} {e.read()[:2000]!r}") from None
        assert body["status"] == "success", (url, body)
        return body["data"]

    def ready(self):
        """Prometheus answers /-/ready with 200 once its TSDB is open (its
        API says 503 before)."""
        try:
            with urllib.request.urlopen(self.base.replace("/api/v1/", "/-/ready"),
                                        timeout=5) as r:
                return r.status == 200
        except OSError as e:
            last[0] = e
            return False

    def query(self, expr):
        data = self.get("query", query=expr)
        assert data["resultType"] == "vector", (expr, data)
        return data["result"]


# What the last poll saw, for the failure message.
last = [None]


def wait_for(what, fn, timeout):
    """fn() until it returns something true; its last value on failure."""
    deadline = time.monotonic() + timeout
    while True:
        got = fn()
        if got:
            return got
        assert time.monotonic() < deadline, f"{what} within {timeout} s: {last[0]}"
        time.sleep(0.5)


def all_targets_up(api):
    targets = api.get("targets", state="active")["activeTargets"]
    last[0] = [(t["labels"]["job"], t["health"], t.get("lastError")) for t in targets]
    return targets if targets and all(t["health"] == "up" for t in targets) else None


def rules_evaluated(api):
    groups = api.get("rules")["groups"]
    last[0] = [(g["name"], [(r["name"], r["health"], r.get("lastError")) for r in g["rules"]])
               for g in groups]
    ok = groups and all(r["health"] == "ok" for g in groups for r in g["rules"])
    return groups if ok else None


def check_config_file(d, env):
    """prometheus.yml names every daemon's metrics port and the rules."""
    text = open(os.path.join(d, "prometheus.yml")).read()
    assert "scrape_interval: 5s" in text, text
    jobs = re.findall(r"- job_name: (\S+)\n\s+static_configs:\n\s+- targets: "
                      r"\['127\.0\.0\.1:(\d+)'\]", text)
    assert jobs == [("mta", env["MTA_METRICS_PORT"]), ("mmp", env["MMP_METRICS_PORT"]),
                    ("shard1", env["SHARD1_METRICS_PORT"]),
                    ("shard2", env["SHARD2_METRICS_PORT"])], text
    assert f"rule_files:\n  - '{monitoring.RULES}'\n" in text, text


def check_rules(api):
    groups = wait_for("every rule evaluated and healthy", lambda: rules_evaluated(api), 30)
    # (listed by the API in name order)
    assert sorted(g["name"] for g in groups) == sorted(monitoring.rule_groups()), groups
    alerts = [r for g in groups for r in g["rules"] if r["type"] == "alerting"]
    assert sorted(r["name"] for r in alerts) == sorted(monitoring.alert_names())
    for r in alerts:
        assert r["labels"].get("severity") in ("warning", "critical"), r
        assert r["annotations"].get("summary") and r["annotations"].get("description"), r
    # A healthy, fresh cluster: no alert is pending, let alone firing
    # (each has a `for:` of a minute or more, so pending is what a rule
    # that matched a healthy cluster would show here).
    alerts = api.get("alerts")["alerts"]
    assert not alerts, alerts


def check_exprs(api):
    """Every dashboard expression runs; every metric read is exported."""
    exported = set(api.get("label/__name__/values"))
    for title, expr in monitoring.dashboard_exprs():
        api.query(expr)                 # status success, or Api.get raises
        for name in monitoring.metric_names(expr):
            assert name in exported, (title, name)
    rules = open(monitoring.RULES).read()
    for expr in re.findall(r"expr: (.+(?:\n {10}.+)*)", rules):
        for name in monitoring.metric_names(expr):
            # Shards of one site export no replication metrics: the rules
            # that read them are checked on three sites a shard by
            # test-cluster-replicas.py.
            if name.startswith("mailtier_store_replication_"):
                continue
            assert name in exported, (expr, name)


def test(h):
    if not os.access(PROMETHEUS, os.X_OK):
        raise mtharness.Skip(f"{PROMETHEUS} is not installed (Debian package prometheus)")
    d = os.path.join(h.tmpdir, "cluster")
    base = mtharness.free_port_block(20)
    h.add_cleanup(lambda: h.ctl("cluster", "down", "--dir", d, check=False))
    h.ctl("cluster", "up", "--dir", d, "--base-port", base, "--users", 10)
    env = mtharness.read_env(os.path.join(d, "endpoints.env"))
    check_config_file(d, env)

    # Mail in before the first scrape, so every sample counts it.
    with smtplib.SMTP("127.0.0.1", int(env["SMTP_PORT"]), timeout=30) as s:
        for k in range(1, MESSAGES + 1):
            s.sendmail("someone@remote.test", [f"user{k}@example.test"],
                       f"Subject: metrics {k}\r\n\r\nmessage {k}\r\n")

    port = mtharness.free_port()
    prom = h.start("prometheus", [PROMETHEUS,
                                  "--config.file=" + os.path.join(d, "prometheus.yml"),
                                  "--storage.tsdb.path=" + os.path.join(h.tmpdir, "tsdb"),
                                  f"--web.listen-address=127.0.0.1:{port}",
                                  "--log.level=warn"],
                   notify=False, ready_port=port, ready_timeout=30)
    try:
        api = Api(port)
        wait_for("Prometheus ready", api.ready, 30)
        targets = wait_for("every target up", lambda: all_targets_up(api), 60)
        jobs = sorted(t["labels"]["job"] for t in targets)
        assert jobs == ["mmp", "mta", "shard1", "shard2"], jobs
        for t in targets:
            port_key = t["labels"]["job"].upper() + "_METRICS_PORT"
            assert t["labels"]["instance"] == f"127.0.0.1:{env[port_key]}", t

        queue = api.query("mailtier_mta_queue_messages")
        assert [q["metric"]["job"] for q in queue] == ["mta"], queue
        float(queue[0]["value"][1])     # a number (0 once delivered)
        accepted = api.query("mailtier_mta_messages_accepted_total")
        assert [a["metric"]["job"] for a in accepted] == ["mta"], accepted
        assert float(accepted[0]["value"][1]) == MESSAGES, accepted
        up = api.query('sum(up{job=~"mta|mmp|shard[0-9]+|mailtier.*"})')
        assert float(up[0]["value"][1]) == 4, up

        # rate() over $__rate_interval needs two samples of each series.
        wait_for("two scrapes of the MTA",
                 lambda: api.query("count_over_time(mailtier_mta_queue_messages[1m]) >= 2"), 30)
        check_exprs(api)
        check_rules(api)
        accepted = api.query("sum(rate(mailtier_mta_messages_accepted_total[1m]))")
        assert len(accepted) == 1, accepted
    finally:
        prom.stop(expect=None)
        h.ctl("cluster", "down", "--dir", d, check=False)


if __name__ == "__main__":
    mtharness.main(test)
