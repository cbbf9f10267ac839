#!/usr/bin/python3
"""Prints the docs/faults.md table from the result.json files of fault runs.

    tests/faults/table.py /tmp/leader-faults/*/result.json
"""

import json
import sys

COLUMNS = [("run", "label"), ("faults", None), ("leases", "leases"), ("writes", "writes"),
           ("rejected by fence", "rejected"), ("stale writes", "stale_writes"),
           ("overlaps (paused / other)", None), ("stop misses", "stop_misses"),
           ("stepped-clock overlaps / misses", None), ("token reuse / order", None),
           ("min stop margin ms", "min_stop_margin_ms")]


def cell(r, name, key):
    if key:
        v = r.get(key)
        return "-" if v is None else str(v)
    if name == "faults":
        return ", ".join("%s %d" % (k.replace("_", " "), v) for k, v in sorted(r["faults"].items()))
    if name.startswith("overlaps"):
        return "%d / %d" % (r["overlaps_paused"], r["overlaps_unexplained"])
    if name.startswith("stepped"):
        return "%d / %d" % (r["stepped_clock_overlaps"], r["stepped_clock_stop_misses"])
    return "%d / %d" % (r["token_reuse"], r["token_order"])


def main():
    print("| " + " | ".join(n for n, _ in COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for path in sys.argv[1:]:
        with open(path) as f:
            r = json.load(f)
        print("| " + " | ".join(cell(r, n, k) for n, k in COLUMNS) + " |")


if __name__ == "__main__":
    main()
