#!/usr/bin/python3
"""Markdown table of campaign takeover times (docs/campaign.md) from the result.json files of
`tests/faults/run.sh --scenario campaign` runs: per store and fault kind, count, median and max
milliseconds from the fault hitting the leader to the first lease start of another worker.

  python3 tests/faults/campaign_table.py /tmp/leader-campaign/*/result.json
"""

import json
import statistics
import sys

KINDS = ["kill", "pause", "partition", "term", "resign"]


def cell(times):
    if not times:
        return "-"
    return "%d: %.0f / %.0f" % (len(times), statistics.median(times), max(times))


def main(paths):
    print("| store | " + " | ".join(KINDS) + " | terms | verdict |")
    print("|---|" + "---|" * (len(KINDS) + 2))
    for path in paths:
        with open(path) as f:
            r = json.load(f)
        t = r.get("takeover_ms", {})
        ok = not any(r.get(k) for k in ("token_reuse", "token_order", "fence_violations",
                                         "overlaps_unexplained", "stop_misses"))
        store = r.get("label", path).split("/")[0]
        print("| %s | %s | %d | %s |" % (store, " | ".join(cell(t.get(k, [])) for k in KINDS),
                                         r.get("leases", 0), "pass" if ok else "FAIL"))
    print("\nEach cell: takeovers measured: median / max ms.")


if __name__ == "__main__":
    main(sys.argv[1:])
