#!/usr/bin/python3
"""Checker of the fault suite (docs/faults.md): reads DIR/ledger and DIR/events.

A lease A (token, pid) ran from its action's start to its effective end: the first of its return,
its stop signal, its kill. Its successor start is the earliest start of a lease with a larger
token. Counted:
  writes / accepted / rejected   writes that reached the fenced resource; rejected = stale writes
                                 refused because a larger token had already written
  stale writes                   writes that arrived after a newer leader had started
  token reuse, token order       the same token granted twice; a later lease (started after an
                                 earlier one ended) with a token that is not larger
  fence violations               accepted writes whose token is below an accepted one (0 by design)
  overlaps                       leases whose successor started before their effective end;
                                 "paused" ones had their process SIGSTOPped meanwhile (the
                                 documented gap that fencing closes), the rest are misses
  stop misses                    writes whose still_leader()/stop_token check began after the
                                 successor had started: the library said "leader" although the
                                 server had already given the lease away
  min stop margin                min over takeovers of (successor start - stop signal), leaving out
                                 paused holders and the stepped-clock worker
Leases of a worker whose CLOCK_MONOTONIC was faked (M events) are reported apart. The strict
verdict (exit 1) fails on token reuse/order, fence violations, unexplained overlaps, stop misses.
"""

import argparse
import json
import os
import sys


def load(d):
    leases, writes, events = {}, [], []
    with open(os.path.join(d, "ledger")) as f:
        for line in f:
            p = line.split()
            if not p:
                continue
            if p[0] == "A" and len(p) == 7:
                key = (int(p[1]), int(p[2]))
                lease = leases.setdefault(key, {"count": 0})
                lease["count"] += 1
                lease.update(token=key[0], pid=key[1], attempt=int(p[4]), start=int(p[5]),
                             deadline=int(p[6]))
            elif p[0] == "E" and len(p) == 6:
                lease = leases.setdefault((int(p[1]), int(p[2])), {"count": 0})
                lease.update(end=int(p[3]), stop=int(p[4]), why=p[5])
            elif p[0] == "W" and len(p) == 6:
                writes.append({"token": int(p[1]), "pid": int(p[2]), "check": int(p[3]),
                               "write": int(p[4]), "accepted": p[5] == "1"})
    path = os.path.join(d, "events")
    if os.path.exists(path):
        with open(path) as f:
            events = [line.split() for line in f if line.strip()]
    return [v for v in leases.values() if "start" in v], writes, events


def analyse(leases, writes, events):
    pauses, kills, mono = {}, {}, set()
    for e in events:
        if e[0] == "P":
            pauses.setdefault(int(e[1]), []).append((int(e[2]), int(e[3])))
        elif e[0] == "K":
            kills.setdefault(int(e[1]), []).append(int(e[2]))
        elif e[0] == "M":
            mono.add(int(e[1]))
    last_write = {}
    for w in writes:
        k = (w["token"], w["pid"])
        last_write[k] = max(last_write.get(k, 0), w["write"])

    leases.sort(key=lambda x: x["start"])
    r = {"leases": len(leases), "writes": len(writes),
         "accepted": sum(w["accepted"] for w in writes),
         "rejected": sum(not w["accepted"] for w in writes),
         "token_reuse": sum(x["count"] - 1 for x in leases), "token_order": 0,
         "fence_violations": 0, "stale_writes": 0, "overlaps": 0, "overlaps_paused": 0,
         "overlaps_unexplained": 0, "stop_misses": 0, "stepped_clock_overlaps": 0,
         "stepped_clock_stop_misses": 0, "takeovers": 0, "min_stop_margin_ms": None}
    by_token = {}
    for x in leases:
        by_token.setdefault(x["token"], []).append(x)
    if any(len(v) > 1 for v in by_token.values()):
        r["token_reuse"] += sum(len(v) - 1 for v in by_token.values())

    for x in leases:  # effective end: return, stop signal or kill, whichever came first
        ends = [t for t in (x.get("end"), x.get("stop") or None) if t]
        ends += [t for t in kills.get(x["pid"], []) if t >= x["start"]]
        if not ends:
            ends = [last_write.get((x["token"], x["pid"]), x["start"])]
        x["eff_end"] = min(ends)

    succ = {}
    suffix_min = None  # earliest start among leases with a larger token
    for x in sorted(leases, key=lambda y: -y["token"]):
        succ[(x["token"], x["pid"])] = suffix_min
        suffix_min = x["start"] if suffix_min is None else min(suffix_min, x["start"])

    for i, a in enumerate(leases):
        if "end" in a:
            for b in leases[i + 1:]:
                if b["attempt"] > a["end"] and b["token"] <= a["token"]:
                    r["token_order"] += 1
        nxt = succ[(a["token"], a["pid"])]
        if nxt is None:
            continue
        r["takeovers"] += 1
        paused = any(p0 < nxt and p1 > a["start"] for p0, p1 in pauses.get(a["pid"], []))
        if a.get("stop") and not paused and a["pid"] not in mono:
            m = (nxt - a["stop"]) / 1e6
            if r["min_stop_margin_ms"] is None or m < r["min_stop_margin_ms"]:
                r["min_stop_margin_ms"] = round(m, 1)
        if nxt < a["eff_end"]:
            if a["pid"] in mono:
                r["stepped_clock_overlaps"] += 1
                continue
            r["overlaps"] += 1
            r["overlaps_paused" if paused else "overlaps_unexplained"] += 1

    highest = 0
    for w in writes:  # ledger order is the resource's order
        nxt = succ.get((w["token"], w["pid"]))
        if nxt is not None and w["write"] > nxt:
            r["stale_writes"] += 1
        if nxt is not None and w["check"] >= nxt:
            r["stepped_clock_stop_misses" if w["pid"] in mono else "stop_misses"] += 1
        if w["accepted"]:
            if w["token"] < highest:
                r["fence_violations"] += 1
            highest = max(highest, w["token"])
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--lease-ms", type=int, default=1500)
    ap.add_argument("--label", default="")
    ap.add_argument("--report-only", action="store_true")
    a = ap.parse_args()
    leases, writes, events = load(a.dir)
    r = analyse(leases, writes, events)
    faults = {}
    fpath = os.path.join(a.dir, "faults")
    if os.path.exists(fpath):
        with open(fpath) as f:
            faults = {k: int(v) for k, v in (line.split() for line in f if line.strip())}
    r["faults"] = faults
    r["label"] = a.label
    with open(os.path.join(a.dir, "result.json"), "w") as f:
        json.dump(r, f, indent=1, sort_keys=True)
    print("faults %s: %s" % (a.label, json.dumps(r, sort_keys=True)))
    bad = [k for k in ("token_reuse", "token_order", "fence_violations", "overlaps_unexplained",
                       "stop_misses") if r[k]]
    if r["writes"] == 0 or r["takeovers"] == 0:
        bad.append("nothing happened (no writes or no takeovers)")
    if bad and not a.report_only:
        print("FAILED: %s" % ", ".join(bad))
        return 1
    print("REPORTED (not a verdict)" if a.report_only else "PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
