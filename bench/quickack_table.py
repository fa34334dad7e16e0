"""quickack_table -- the one report of bench/imap-literal.py and
bench/milter-latency.py: for each arm (a path or a filter), its figures
with TCP_QUICKACK off and on, as a table of medians, minimums, maximums
and every run's figure, and optionally as JSON ("ARM-off": [...])."""

import json
import statistics


def report(column, arms, figures, json_path=None):
    """figures[(arm, quickack)]: one figure (ms) per run."""
    out = {}
    print(f"{column:9s} {'quickack':8s} {'median':>8s} {'min':>8s} {'max':>8s}  runs")
    for arm in arms:
        for quickack in (False, True):
            v = figures[(arm, quickack)]
            word = "on" if quickack else "off"
            out[f"{arm}-{word}"] = v
            print(f"{arm:9s} {word:8s} {statistics.median(v):8.2f} "
                  f"{min(v):8.2f} {max(v):8.2f}  " + ", ".join(f"{x:.2f}" for x in v))
    if json_path:
        with open(json_path, "w") as f:
            json.dump(out, f, indent=1)
    return out
