"""monitoring.py -- what the monitoring tests share: the shipped alert
rules and Grafana dashboard (packaging/prometheus/, packaging/grafana/) and
the PromQL expressions of the dashboard made runnable outside Grafana.

Trust boundary: files of this source tree only."""

import json
import os
import re

SRCDIR = os.environ.get("MT_SRCDIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
RULES = os.path.join(SRCDIR, "packaging", "prometheus", "mailtier-alerts.yml")
RULES_TEST = os.path.join(SRCDIR, "packaging", "prometheus", "mailtier-alerts.test.yml")
DASHBOARD = os.path.join(SRCDIR, "packaging", "grafana", "mailtier-dashboard.json")

# Grafana's built-in variables, as Grafana would expand them for a 5 s
# scrape interval (rate() needs at least two samples in its window).
GRAFANA_VARS = {"$__rate_interval": "1m", "$__interval": "15s", "$__range": "1h"}


def rule_groups():
    """The names of the groups in the shipped rules file, in order."""
    return re.findall(r"^  - name: (\S+)$", open(RULES).read(), re.M)


def alert_names():
    return re.findall(r"^      - alert: (\S+)$", open(RULES).read(), re.M)


def dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def expand(expr):
    """expr with Grafana's variables replaced; any other $variable left
    is an error (the dashboard defines none)."""
    for var, value in GRAFANA_VARS.items():
        expr = expr.replace(var, value)
    assert "$" not in expr, f"unknown Grafana variable in {expr!r}"
    return expr


def dashboard_exprs():
    """(panel title, expanded PromQL) of every target of every panel."""
    return [(p["title"], expand(t["expr"]))
            for p in dashboard()["panels"] for t in p.get("targets", [])]


def metric_names(expr):
    """The metric names expr reads (identifiers followed by a selector,
    a range or the end, that are not functions, keywords or labels)."""
    expr = re.sub(r'"[^"]*"', '""', expr)           # label values
    expr = re.sub(r"\{[^}]*\}", "{}", expr)          # matchers
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)",
                  "", expr)
    keywords = {"sum", "max", "min", "avg", "count", "rate", "irate", "increase",
                "deriv", "delta", "histogram_quantile", "vector", "and", "or",
                "unless", "bool", "offset", "topk", "bottomk", "abs", "clamp_min"}
    names = set()
    for m in re.finditer(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()", expr):
        name = m.group(1)
        if name not in keywords and not re.fullmatch(r"\d+[smhdwy]", name):
            names.add(name)
    return names
