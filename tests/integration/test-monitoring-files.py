#!/usr/bin/env python3
"""test-monitoring-files.py -- the shipped monitoring files, without a
running Prometheus: packaging/prometheus/mailtier-alerts.yml passes
`promtool check rules` and its unit tests (`promtool test rules
mailtier-alerts.test.yml`: series that fire and do not fire each alert),
and every alert has a test; packaging/grafana/mailtier-dashboard.json is a
Grafana dashboard with a ${DS_PROMETHEUS} input whose panels have unique
ids, at least one target each, and whose every PromQL expression parses
(as a recording rule checked by promtool). test-metrics-prometheus.py runs
the same expressions against a real Prometheus scraping a cluster."""

import json
import os
import shutil
import subprocess

import monitoring
import mtharness


def promtool(*args):
    p = subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"promtool {' '.join(args)}:\n{p.stdout}{p.stderr}"
    return p.stdout


def check_rules():
    out = promtool("check", "rules", monitoring.RULES)
    assert f"SUCCESS: {len(monitoring.alert_names())} rules found" in out, out
    out = promtool("test", "rules", monitoring.RULES_TEST)
    assert "SUCCESS" in out, out
    tests = open(monitoring.RULES_TEST).read()
    for name in monitoring.alert_names():
        assert f"alertname: {name}\n" in tests, f"{name} has no unit test"
    assert set(monitoring.rule_groups()) == {"mailtier-availability", "mailtier-queue",
                                             "mailtier-delivery", "mailtier-logins"}


def check_dashboard(tmpdir):
    d = monitoring.dashboard()          # valid JSON, or this raises
    assert 36 <= d["schemaVersion"] <= 41, d["schemaVersion"]
    assert [i["name"] for i in d["__inputs"]] == ["DS_PROMETHEUS"], d["__inputs"]
    assert d["uid"] and d["title"], d
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids)), f"duplicate panel ids: {ids}"
    kinds = {p["type"] for p in d["panels"]}
    assert kinds <= {"stat", "timeseries"}, kinds
    assert sum(p["gridPos"]["y"] == 0 for p in d["panels"]) == 6, "the top row of stats"
    for p in d["panels"]:
        where = f"panel {p['id']} ({p['title']})"
        assert p["targets"], f"{where} has no target"
        assert p["datasource"]["uid"] == "${DS_PROMETHEUS}", where
        g = p["gridPos"]
        assert g["x"] >= 0 and g["w"] > 0 and g["x"] + g["w"] <= 24, where
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)), where
        for t in p["targets"]:
            assert t["datasource"]["uid"] == "${DS_PROMETHEUS}", where
            assert t["expr"].strip(), where
    # Every expression parses: promtool checks each as a recording rule
    # (a rules file in JSON, which is YAML).
    exprs = monitoring.dashboard_exprs()
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:expr{i}", "expr": expr} for i, (_, expr) in enumerate(exprs)]}]}
    path = os.path.join(tmpdir, "dashboard-exprs.json")
    with open(path, "w") as f:
        json.dump(rules, f)
    out = promtool("check", "rules", path)
    assert f"SUCCESS: {len(exprs)} rules found" in out, out
    # Each metric the dashboard reads is one a daemon exports (checked
    # against real scrapes in test-metrics-prometheus.py); here: a name
    # at least has mailtier's or the standard prefixes.
    for title, expr in exprs:
        for name in monitoring.metric_names(expr):
            assert name == "up" or name.startswith(("mailtier_", "process_")), (title, name)


def test(h):
    if shutil.which("promtool") is None:
        raise mtharness.Skip("promtool is not installed (Debian package prometheus)")
    check_rules()
    check_dashboard(h.tmpdir)


if __name__ == "__main__":
    mtharness.main(test)
