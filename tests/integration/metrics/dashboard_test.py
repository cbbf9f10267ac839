#!/usr/bin/env python3
"""Checks the Grafana dashboards of deploy/grafana against the series table of docs/metrics.md:
every file parses as JSON, panels have unique ids and a data source, and every metric name in an
expression (panel targets and template variable queries) is one of our series (a histogram's
_bucket/_count/_sum included). Also: every series of the table is shown by some panel.

  dashboard_test.py <deploy/grafana> <docs/metrics.md>
"""

import glob
import json
import os
import re
import sys

SERIES_ROW = re.compile(r"^\| `(leader_[a-z_]+)` \| (counter|gauge|histogram) \|")
# A metric name: an identifier followed by a selector, or any leader_ identifier.
SELECTED = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{")
LEADER_NAME = re.compile(r"\b(leader_[a-z_]+)\b")
QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')


def series_names(doc):
    names = {}
    with open(doc) as f:
        for line in f:
            m = SERIES_ROW.match(line)
            if m:
                names[m.group(1)] = m.group(2)
    return names


def allowed(series):
    out = set()
    for name, kind in series.items():
        out.add(name)
        if kind == "histogram":
            out.update({name + "_bucket", name + "_count", name + "_sum"})
    return out


def expressions(dashboard):
    for panel in dashboard.get("panels", []):
        for row_panel in [panel] + panel.get("panels", []):
            for target in row_panel.get("targets", []):
                if "expr" in target:
                    yield "panel %r" % row_panel.get("title"), target["expr"]
    for var in dashboard.get("templating", {}).get("list", []):
        query = var.get("query")
        if isinstance(query, dict):
            query = query.get("query")
        if var.get("type") == "query" and query:
            yield "variable %r" % var.get("name"), query


def metric_names(expr):
    text = QUOTED.sub('""', expr)  # label values never count as names
    names = set(SELECTED.findall(text)) | set(LEADER_NAME.findall(text))
    return names - {"by", "without", "on", "ignoring", "group_left", "group_right"}


def main():
    folder, doc = sys.argv[1], sys.argv[2]
    series = series_names(doc)
    if len(series) < 10:
        print("FAIL: found only %d series rows in %s" % (len(series), doc))
        return 1
    ok_names = allowed(series) | {"up"}
    failures = []
    used = set()
    files = sorted(glob.glob(os.path.join(folder, "*.json")))
    if not files:
        print("FAIL: no dashboard in %s" % folder)
        return 1
    for path in files:
        try:
            with open(path) as f:
                dashboard = json.load(f)
        except ValueError as e:
            failures.append("%s: not JSON: %s" % (path, e))
            continue
        ids = [p.get("id") for p in dashboard.get("panels", [])]
        if len(ids) != len(set(ids)):
            failures.append("%s: duplicate panel ids %s" % (path, ids))
        for panel in dashboard.get("panels", []):
            if not panel.get("datasource") or not panel.get("targets"):
                failures.append("%s: panel %r has no data source or no target"
                                % (path, panel.get("title")))
        count = 0
        for where, expr in expressions(dashboard):
            count += 1
            for name in metric_names(expr):
                if name not in ok_names:
                    failures.append("%s: %s uses %r, not a series of %s"
                                    % (path, where, name, doc))
                base = re.sub(r"_(bucket|count|sum)$", "", name)
                used.add(base if base in series else name)
        print("%s: %d panels, %d expressions" % (os.path.basename(path), len(ids), count))
    unused = sorted(set(series) - used)
    if unused:
        failures.append("series shown by no panel: %s" % ", ".join(unused))
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
