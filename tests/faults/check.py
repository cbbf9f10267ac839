#!/usr/bin/python3
"""Checker of the fault suite (docs/faults.md): reads DIR/ledger and DIR/events.

The judge is the server, seen through the other workers: a lease A (token, pid, slot) ran from its
action's start to its effective end, the first of its return, its stop signal, its kill. Its
successor start is the earliest start of a lease with a larger token in the same slot (a single
lease is slot 0): the first successful takeover by another worker, i.e. the instant the server had
certainly let someone else in. Counted:
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
  resource-order overlaps        writes that reach the resource (ledger order) after an accepted
                                 write of a larger token of the same slot; "unexplained" when the
                                 writer was not paused and its check came after the successor's start
  max holders                    most leases live at once (start .. effective end, paused and
                                 stepped-clock holders left out); a group of N must stay <= N
  extends                        ctx.extend() calls (X lines) and how many returned true
  data loss                      overlaps and stop misses whose successor started while a server
                                 that lost data in a crash (L events: Redis RDB/AOF) was restarting
                                 or within a lease after it: the server forgot the lease, which no
                                 client can see before its next renewal; reported, not a verdict
  min stop margin                min over takeovers of (successor start - stop signal), leaving out
                                 paused holders and the stepped-clock worker
  takeover_ms                    campaign runs: per fault kind (kill, pause, partition, term), the
                                 time from the fault hitting the holder to the first lease start of
                                 another worker; bounded by --takeover-bound-ms (kill, pause,
                                 partition) and --handover-bound-ms (term: SIGTERM, the campaign
                                 stops and releases; resign: Campaign::resign())
  observer misses                campaign runs: a fault_worker --observe process polls inspect() and
                                 logs O lines; a lease still active (before its effective end) after
                                 an observation, sent after its start, that showed another token or
                                 a free lock (paused holders counted apart)
Leases of a worker whose CLOCK_MONOTONIC was faked (M events) are reported apart. The strict
verdict (exit 1) fails on token reuse/order, fence violations, unexplained overlaps, stop misses,
more than N holders at once, and on a vacuous run: fewer than --min-terms leases, or something
named in --require that never happened (faults: any fault injected; takeovers; extends;
concurrent_holders: two group holders at once; a fault kind such as restart_server).
"""

import argparse
import json
import os
import sys


def load(d):
    leases, writes, events, extends = {}, [], [], []
    with open(os.path.join(d, "ledger")) as f:
        for line in f:
            p = line.split()
            if not p:
                continue
            if p[0] == "A" and len(p) in (7, 8):
                key = (int(p[1]), int(p[2]))
                lease = leases.setdefault(key, {"count": 0})
                lease["count"] += 1
                lease.update(token=key[0], pid=key[1], attempt=int(p[4]), start=int(p[5]),
                             deadline=int(p[6]), slot=int(p[7]) if len(p) == 8 else 0)
            elif p[0] == "E" and len(p) == 6:
                lease = leases.setdefault((int(p[1]), int(p[2])), {"count": 0})
                lease.update(end=int(p[3]), stop=int(p[4]), why=p[5])
            elif p[0] == "W" and len(p) == 6:
                writes.append({"token": int(p[1]), "pid": int(p[2]), "check": int(p[3]),
                               "write": int(p[4]), "accepted": p[5] == "1"})
            elif p[0] == "X" and len(p) == 7:
                extends.append({"token": int(p[1]), "ttl_ms": int(p[5]), "ok": int(p[6])})
    path = os.path.join(d, "events")
    if os.path.exists(path):
        with open(path) as f:
            events = [line.split() for line in f if line.strip()]
    return [v for v in leases.values() if "start" in v], writes, events, extends


def successors(leases):
    """(token, pid) -> earliest start of a lease with a larger token in the same slot."""
    succ, suffix_min = {}, {}
    for x in sorted(leases, key=lambda y: -y["token"]):
        m = suffix_min.get(x["slot"])
        succ[(x["token"], x["pid"])] = m
        suffix_min[x["slot"]] = x["start"] if m is None else min(m, x["start"])
    return succ


def max_holders(leases, pauses, mono, lossy):
    """Most leases live at once, counting [start, effective end) of unpaused holders; instants in
    a data-loss window (see above) are left out."""
    marks = []
    for x in leases:
        if x["pid"] in mono or any(p0 < x["eff_end"] and p1 > x["start"]
                                   for p0, p1 in pauses.get(x["pid"], [])):
            continue
        marks += [(x["start"], 1), (x["eff_end"], -1)]
    live = best = 0
    for t, d in sorted(marks):  # an end sorts before a start at the same instant
        live += d
        if not any(t0 <= t <= t1 for t0, t1 in lossy):
            best = max(best, live)
    return best


def resource_order(writes, lease_of, succ, pauses, lossy):
    """Writes after an accepted write of a larger token of the same slot, in ledger order."""
    highest, total, unexplained = {}, 0, 0
    for w in writes:
        x = lease_of.get((w["token"], w["pid"]))
        slot = x["slot"] if x else 0
        if w["token"] < highest.get(slot, 0):
            total += 1
            nxt = succ.get((w["token"], w["pid"]))
            paused = any(p0 < w["write"] and p1 > (x["start"] if x else 0)
                         for p0, p1 in pauses.get(w["pid"], []))
            if (not paused and nxt is not None and w["check"] >= nxt
                    and not any(t0 <= nxt <= t1 for t0, t1 in lossy)):
                unexplained += 1
        if w["accepted"]:
            highest[slot] = max(highest.get(slot, 0), w["token"])
    return total, unexplained


def analyse(leases, writes, events, lease_ns):
    pauses, kills, mono, lossy = {}, {}, set(), []
    for e in events:
        if e[0] == "P":
            pauses.setdefault(int(e[1]), []).append((int(e[2]), int(e[3])))
        elif e[0] == "K":
            kills.setdefault(int(e[1]), []).append(int(e[2]))
        elif e[0] == "M":
            mono.add(int(e[1]))
        elif e[0] == "L":
            lossy.append((int(e[1]), int(e[2]) + lease_ns))
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
         "stepped_clock_stop_misses": 0, "takeovers": 0, "min_stop_margin_ms": None,
         "overlaps_data_loss": 0, "stop_misses_data_loss": 0}
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

    succ = successors(leases)
    lease_of = {(x["token"], x["pid"]): x for x in leases}
    r["max_holders"] = max_holders(leases, pauses, mono, lossy)
    r["resource_order_overlaps"], r["resource_order_unexplained"] = resource_order(
        writes, lease_of, succ, pauses, lossy)

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
            if paused:
                r["overlaps_paused"] += 1
            elif any(t0 <= nxt <= t1 for t0, t1 in lossy):
                r["overlaps_data_loss"] += 1
            else:
                r["overlaps_unexplained"] += 1

    highest = {}
    for w in writes:  # ledger order is the resource's order
        nxt = succ.get((w["token"], w["pid"]))
        if nxt is not None and w["write"] > nxt:
            r["stale_writes"] += 1
        if nxt is not None and w["check"] >= nxt:
            if w["pid"] in mono:
                r["stepped_clock_stop_misses"] += 1
            elif any(t0 <= nxt <= t1 for t0, t1 in lossy):
                r["stop_misses_data_loss"] += 1
            else:
                r["stop_misses"] += 1
        if w["accepted"]:
            x = lease_of.get((w["token"], w["pid"]))
            slot = x["slot"] if x else 0
            if w["token"] < highest.get(slot, 0):
                r["fence_violations"] += 1
            highest[slot] = max(highest.get(slot, 0), w["token"])
    return r


def observed(d):
    """The O lines of a campaign run's observer: (send_ns, reply_ns, token, pid)."""
    out = []
    with open(os.path.join(d, "ledger")) as f:
        for line in f:
            p = line.split()
            if len(p) == 5 and p[0] == "O":
                out.append((int(p[1]), int(p[2]), int(p[3]), int(p[4])))
    return out


def observer_misses(leases, observations, events):
    """Leases still active (before their effective end) after the observer saw the store give the
    lock to another token or free it: the store's view at some instant in [send, reply], so an
    active lease must have ended by reply. Paused holders are counted apart (the fencing gap)."""
    pauses = {}
    for e in events:
        if e[0] == "P":
            pauses.setdefault(int(e[1]), []).append((int(e[2]), int(e[3])))
    misses = paused = 0
    for x in leases:
        for send, reply, token, _ in observations:
            if send > x["start"] and token != x["token"] and x["eff_end"] > reply:
                if any(p0 < reply and p1 > x["start"] for p0, p1 in pauses.get(x["pid"], [])):
                    paused += 1
                else:
                    misses += 1
                break
    return misses, paused


KINDS = {"K": "kill", "P": "pause", "N": "partition", "T": "term", "G": "resign"}


def takeovers(leases, events):
    """kind -> [ms from a fault that hit a holder to the next start of another worker's lease]."""
    out = {}
    for e in events:
        if e[0] not in KINDS:
            continue
        pid, t = int(e[1]), int(e[2])
        holding = any(x["pid"] == pid and x["start"] <= t and x.get("end", t) >= t
                      for x in leases)
        nxt = [x["start"] for x in leases if x["pid"] != pid and x["start"] > t]
        if holding and nxt:
            out.setdefault(KINDS[e[0]], []).append(round((min(nxt) - t) / 1e6, 1))
    return out


def vacuous(r, a, faults):
    """Reasons the run proves nothing: too few terms, or a required event never happened."""
    why = []
    if r["terms"] < a.min_terms or r["writes"] == 0:
        why.append("vacuous: %d terms (at least %d needed), %d writes"
                   % (r["terms"], a.min_terms, r["writes"]))
    for need in filter(None, a.require.split(",")):
        if need == "faults":
            ok = sum(faults.values()) > 0
        elif need == "takeovers":
            ok = r["takeovers"] > 0
        elif need == "extends":
            ok = r["extends_ok"] > 0
        elif need == "concurrent_holders":
            ok = r["max_holders"] >= 2
        elif need == "observations":
            ok = r.get("observations", 0) > 0
        else:
            ok = faults.get(need, 0) > 0
        if not ok:
            why.append("vacuous: no %s" % need)
    return why


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--lease-ms", type=int, default=1500)
    ap.add_argument("--label", default="")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--group", type=int, default=0, help="N of a group run (0: single leader)")
    ap.add_argument("--min-terms", type=int, default=2)
    ap.add_argument("--require", default="faults,takeovers")
    ap.add_argument("--takeover-bound-ms", type=float, default=None,
                    help="campaign: a standby starts within this after kill/pause/partition")
    ap.add_argument("--handover-bound-ms", type=float, default=None,
                    help="campaign: a standby starts within this after the holder's SIGTERM")
    a = ap.parse_args()
    leases, writes, events, extends = load(a.dir)
    r = analyse(leases, writes, events, a.lease_ms * 10**6)
    r["terms"] = r["leases"]
    r["extends"] = len(extends)
    r["extends_ok"] = sum(x["ok"] == 1 for x in extends)
    r["group"] = a.group
    faults = {}
    fpath = os.path.join(a.dir, "faults")
    if os.path.exists(fpath):
        with open(fpath) as f:
            faults = {k: int(v) for k, v in (line.split() for line in f if line.strip())}
    r["faults"] = faults
    r["label"] = a.label
    r["takeover_ms"] = takeovers(leases, events)
    obs = observed(a.dir)
    r["observations"] = len(obs)
    r["observer_misses"], r["observer_misses_paused"] = observer_misses(leases, obs, events)
    with open(os.path.join(a.dir, "result.json"), "w") as f:
        json.dump(r, f, indent=1, sort_keys=True)
    print("faults %s: %s" % (a.label, json.dumps(r, sort_keys=True)))
    bad = [k for k in ("token_reuse", "token_order", "fence_violations", "overlaps_unexplained",
                       "stop_misses", "resource_order_unexplained", "observer_misses") if r[k]]
    if r["max_holders"] > max(1, a.group):
        bad.append("%d holders at once (allowed %d)" % (r["max_holders"], max(1, a.group)))
    for kind, times in sorted(r["takeover_ms"].items()):
        bound = a.handover_bound_ms if kind in ("term", "resign") else a.takeover_bound_ms
        if bound is not None and max(times) > bound:
            bad.append("takeover after %s took %.0f ms (bound %.0f ms)" % (kind, max(times), bound))
    bad += vacuous(r, a, faults)
    if bad and not a.report_only:
        print("FAILED: %s" % ", ".join(bad))
        return 1
    print("REPORTED (not a verdict)" if a.report_only else "PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
