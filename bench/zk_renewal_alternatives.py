#!/usr/bin/python3
"""What the ways of renewing N held ZooKeeper nodes in one round trip cost (bench/README.md,
"held leases", ZooKeeper's memory per lease). The store's way (src/clients/zookeeper/own_nodes.cpp)
keeps one data watch per held node registered in the C client and sends one exists("/") probe
per batch: no server write, but the client keeps each watch's registration. The two ways without
a per-node watch, measured here with kazoo against the same server, on N ephemeral nodes of one
session:

  check-multi: one multi of N check(path, version) ops. A multi is a write: the server logs it
               (and a quorum proposes it), check ops included. Reported: transaction-log bytes
               per checked node, from the log file's used length (ZooKeeper pre-allocates the
               file with zeros: the last non-zero byte ends the last entry).
  reads:       N pipelined exists(path) (kazoo's exists_async), the client's work per node.
  probe:       one exists("/"), the store's way, for the round trip it costs.

  /usr/bin/python3 bench/zk_renewal_alternatives.py [HOSTS] [N] [ROUNDS] [DATA_DIR]
defaults: 127.0.0.1:12181 1000 20 /tmp/le-test/zk/data (scripts/test-servers.sh's server).
"""
import glob
import os
import sys
import time

from kazoo.client import KazooClient


def used_log_bytes(data_dir):
    """Bytes written to the newest transaction log (its used length, not its pre-allocation)."""
    logs = glob.glob(os.path.join(data_dir, "version-2", "log.*"))
    if not logs:
        return 0
    newest = max(logs, key=lambda p: int(p.rsplit(".", 1)[1], 16))
    with open(newest, "rb") as f:
        data = f.read()
    return len(data.rstrip(b"\0")), newest


def main():
    hosts = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:12181"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    data_dir = sys.argv[4] if len(sys.argv) > 4 else "/tmp/le-test/zk/data"
    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=10)
    base = "/leader-bench-alternatives-%d" % os.getpid()
    zk.ensure_path(base)
    paths = ["%s/bench-%06d-owner__lock__%010d" % (base, i, i) for i in range(n)]
    for p in paths:
        zk.create_async(p, b"x" * 64, ephemeral=True)
    zk.sync(base)
    assert len(zk.get_children(base)) == n

    results = {}
    # check-multi: one transaction of n checks per round.
    before = used_log_bytes(data_dir)
    t0 = time.perf_counter()
    c0 = time.process_time()
    for _ in range(rounds):
        tx = zk.transaction()
        for p in paths:
            tx.check(p, 0)
        out = tx.commit()
        assert all(r is True for r in out), out[:3]
    results["check-multi"] = (time.perf_counter() - t0, time.process_time() - c0)
    after = used_log_bytes(data_dir)
    log_bytes = None
    if before and after and before[1] == after[1]:
        log_bytes = after[0] - before[0]

    # reads: n pipelined exists per round.
    t0 = time.perf_counter()
    c0 = time.process_time()
    for _ in range(rounds):
        calls = [zk.exists_async(p) for p in paths]
        assert all(c.get() is not None for c in calls)
    results["reads"] = (time.perf_counter() - t0, time.process_time() - c0)

    # probe: one exists("/") per round.
    t0 = time.perf_counter()
    c0 = time.process_time()
    for _ in range(rounds):
        zk.exists("/")
    results["probe"] = (time.perf_counter() - t0, time.process_time() - c0)

    for p in paths:
        zk.delete_async(p)
    zk.sync(base)
    zk.delete(base)
    zk.stop()

    print("nodes=%d rounds=%d" % (n, rounds))
    for name, (wall, cpu) in results.items():
        print("%s: wall_ms_per_round=%.2f python_client_cpu_ms_per_round=%.2f" %
              (name, wall * 1000 / rounds, cpu * 1000 / rounds))
    if log_bytes is not None:
        print("check-multi: txn_log_bytes_per_checked_node=%.1f txn_log_bytes_per_round=%d" %
              (log_bytes / (rounds * n), log_bytes // rounds))
    else:
        print("check-multi: txn log rolled over during the run; log bytes not measured")


if __name__ == "__main__":
    main()
