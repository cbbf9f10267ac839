#!/usr/bin/python3
"""Soak mode of the fault suite (docs/faults.md), outside CI: run.sh --soak.

For each store, runs faults.py in chunks until the chunks together hold --terms leadership terms
(leases), rotating three variants so that every fault kind of the suite is in the soak:
  mixed + extend   every fault (pauses, kill -9, proxy partitions, server pauses/restarts, wall-clock
                   jumps); workers call ctx.extend() longer and shorter than the lease
  netns + extend   the same with partitions made by nft drop rules in network namespaces (network
                   stores; needs root and nftables, else the proxy)
  group + extend   a group elector with max_leaders 2 (5 workers)
postgres-standby-async and postgres-standby-sync are failovers of a private PostgreSQL primary +
streaming standby (topology_postgres.py: as many as fit in each chunk, one every 6-16 s);
redis-sentinel-async and redis-sentinel-wait are failovers of Redis behind Sentinel
(topology_redis.py, without and with ?wait_replicas=1).
redis-cluster-async and redis-cluster-wait are failovers of a Redis Cluster with replicas
(topology_redis_cluster.py, without and with ?wait_replicas=1).
Redis runs on a private redis-server with RDB snapshots (crash = SAVE, writes, kill -9, restart),
DynamoDB on a private dynalite with --path (crash = kill -9, restart); both get crash-restarts in
every chunk. PostgreSQL, MariaDB, etcd and ZooKeeper are the shared test servers, unless the
environment of private_servers.sh is set (LEADER_FAULTS_PRIVATE=1 and the LEADER_FAULTS_*
addresses, the recommended way): on the shared ones each chunk holds the shared-server lock
(LEADER_SERVERS_LOCK, default /tmp/leader-servers.lock); either way they are restarted at most
twice per chunk. The memory store is in-process only: the suite needs separate processes to pause
and kill, so it is not soaked (tests/contract covers it).

  tests/faults/run.sh --soak [--stores "sqlite redis ..."] [--terms 1000] [--chunk-seconds 150]

Writes OUT/<store>/chunk-<k>/result.json for every chunk and OUT/soak.json, prints the table;
run.sh --soak --table A/soak.json B/soak.json prints one table of several soaks.
Exit 1 when a chunk's verdict fails.
"""

import argparse
import fcntl
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STORES = ["sqlite", "redis", "postgres", "mysql", "etcd", "zookeeper", "dynamodb",
          "postgres-standby-async", "postgres-standby-sync",  # issue 15 failovers from here on
          "redis-sentinel-async", "redis-sentinel-wait",
          "redis-cluster-async", "redis-cluster-wait"]
SHARED = {"postgres", "mysql", "etcd", "zookeeper"}
SUMS = ["terms", "writes", "fence_violations", "token_reuse", "token_order", "stop_misses",
        "overlaps_unexplained", "resource_order_unexplained", "overlaps_paused",
        "overlaps_data_loss", "stop_misses_data_loss", "extends_ok", "takeovers"]


def variants(store):
    v = [["--scenario", "mixed", "--extend"]]
    if store != "sqlite":
        v.append(["--scenario", "netns", "--extend"])
    v.append(["--scenario", "group", "--extend"])
    return v


def run_chunk(a, store, k, out):
    cmd = [sys.executable, os.path.join(HERE, "faults.py"), "--store", store, "--worker", a.worker,
           "--out", out, "--seconds", str(a.chunk_seconds), "--lease-ms", str(a.lease_ms),
           "--max-steps", str(a.max_steps), "--seed", str(a.seed + k)]
    if store.startswith("postgres-standby-"):  # failovers of a private pair, topology_postgres.py
        cmd[1:4] = [os.path.join(HERE, "topology_postgres.py"), "--commit",
                    store[len("postgres-standby-"):], "--failovers", "1000"]
    elif store.startswith("redis-sentinel-"):  # failovers behind Sentinel, topology_redis.py
        cmd[1:4] = [os.path.join(HERE, "topology_redis.py"), "--wait",
                    "1" if store.endswith("-wait") else "0"]
    elif store.startswith("redis-cluster-"):  # failovers of a Cluster, topology_redis_cluster.py
        cmd[1:4] = [os.path.join(HERE, "topology_redis_cluster.py"), "--wait",
                    "1" if store.endswith("-wait") else "0"]
    else:
        cmd += variants(store)[k % len(variants(store))]
    if store == "redis":
        cmd += ["--redis-persist", "rdb"]
    lock = None
    if store in SHARED and os.environ.get("LEADER_FAULTS_PRIVATE") != "1":
        lock = open(os.environ.get("LEADER_SERVERS_LOCK", "/tmp/leader-servers.lock"), "a")
        fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        rc = subprocess.call(cmd)
    finally:
        if lock:
            lock.close()
    if rc == 77:  # no nft here: the same chunk with proxy partitions
        cmd[cmd.index("netns")] = "mixed"
        rc = subprocess.call(cmd)
    try:
        with open(os.path.join(out, "result.json")) as f:
            r = json.load(f)
    except OSError:  # the run did not get as far as the checker: a failed chunk
        r = {"terms": 0, "max_holders": 0, "group": 0, "faults": {}}
        rc = rc or 1
    r["rc"] = rc
    r["command"] = " ".join(cmd[1:])
    return r


def soak(a, store):
    total = {k: 0 for k in SUMS}
    total.update(store=store, chunks=0, failed=0, max_holders_excess=0, faults={})
    t0 = time.monotonic()
    k = 0
    while total["terms"] < a.terms:
        r = run_chunk(a, store, k, os.path.join(a.out, store, "chunk-%d" % k))
        for key in SUMS:
            total[key] += r.get(key, 0)
        total["max_holders_excess"] += max(0, r["max_holders"] - max(1, r["group"]))
        for f, n in r["faults"].items():
            total["faults"][f] = total["faults"].get(f, 0) + n
        total["chunks"] += 1
        total["failed"] += r["rc"] != 0
        k += 1
        if r["terms"] == 0:
            break  # a chunk that could not run: do not loop on it
        print("soak %s: chunk %d rc %d, %d terms so far" % (store, k, r["rc"], total["terms"]),
              flush=True)
    total["seconds"] = round(time.monotonic() - t0)
    return total


def table(rows):
    head = ["store", "terms", "fence violations", "token reuse / order", "stop misses",
            "unexplained overlaps", "over N holders", "paused overlaps", "data-loss overlaps / misses",
            "extends", "faults", "chunks (failed)", "duration s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for t in rows:
        faults = sum(t["faults"].values())
        lines.append("| " + " | ".join(str(x) for x in [
            t["store"], t["terms"], t["fence_violations"],
            "%d / %d" % (t["token_reuse"], t["token_order"]), t["stop_misses"],
            t["overlaps_unexplained"] + t["resource_order_unexplained"], t["max_holders_excess"],
            t["overlaps_paused"], "%d / %d" % (t["overlaps_data_loss"], t["stop_misses_data_loss"]),
            t["extends_ok"], faults, "%d (%d)" % (t["chunks"], t["failed"]), t["seconds"]]) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", default="")
    ap.add_argument("--out", default="/tmp/leader-faults/soak")
    ap.add_argument("--stores", default=" ".join(STORES))
    ap.add_argument("--terms", type=int, default=1000)
    ap.add_argument("--chunk-seconds", type=int, default=150)
    ap.add_argument("--lease-ms", type=int, default=1000)
    ap.add_argument("--max-steps", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--table", nargs="*", help="only print the table of these soak.json files")
    a = ap.parse_args()
    if a.table is not None:
        rows = []
        for path in a.table:
            with open(path) as f:
                rows += json.load(f)
        print(table(rows))
        return 0
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for store in a.stores.split():
        rows.append(soak(a, store))
        with open(os.path.join(a.out, "soak.json"), "w") as f:
            json.dump(rows, f, indent=1)
    print(table(rows))
    return 1 if any(t["failed"] for t in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
