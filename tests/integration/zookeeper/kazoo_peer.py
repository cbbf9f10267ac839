#!/usr/bin/python3
"""kazoo side of the ZooKeeper interop tests and benchmark (Debian python3-kazoo).

  kazoo_peer.py hold HOSTS PATH [SESSION_S]  acquire Lock(PATH), print "HELD <node>", hold until
                                             stdin closes (or the process is killed)
  kazoo_peer.py try HOSTS PATH               non-blocking acquire: print ACQUIRED (then release)
                                             or SKIPPED
  kazoo_peer.py bench HOSTS PATH N           N x (Lock.acquire(blocking=False) + release) and N x
                                             raw create+delete; prints one line per measurement
"""
import sys
import time

from kazoo.client import KazooClient


def client(hosts, timeout=10.0):
    zk = KazooClient(hosts=hosts, timeout=timeout)
    zk.start(timeout=10)
    return zk


def hold(hosts, path, session_s):
    zk = client(hosts, session_s)
    lock = zk.Lock(path, "kazoo-holder")
    lock.acquire(timeout=30)
    print("HELD", lock.node, flush=True)
    sys.stdin.read()  # until the test closes our stdin
    lock.release()
    zk.stop()


def try_lock(hosts, path):
    zk = client(hosts)
    lock = zk.Lock(path, "kazoo-try")
    if lock.acquire(blocking=False):
        print("ACQUIRED", flush=True)
        lock.release()
    else:
        print("SKIPPED", flush=True)
    zk.stop()


def stats(name, samples, wall):
    samples.sort()
    p50 = samples[len(samples) // 2] * 1e6
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))] * 1e6
    print(f"{name} n={len(samples)} ops_per_s={len(samples) / wall:.0f} "
          f"p50_us={p50:.0f} p99_us={p99:.0f}", flush=True)


def bench(hosts, path, n):
    zk = client(hosts)
    zk.ensure_path(path)
    samples = []
    t0 = time.perf_counter()
    for _ in range(n):
        s = time.perf_counter()
        lock = zk.Lock(path, "kazoo-bench")
        if not lock.acquire(blocking=False):
            raise SystemExit("kazoo bench lock is contended")
        lock.release()
        samples.append(time.perf_counter() - s)
    stats("kazoo_lock_acquire_release", samples, time.perf_counter() - t0)
    samples = []
    t0 = time.perf_counter()
    for _ in range(n):
        s = time.perf_counter()
        node = zk.create(path + "/raw-", b"", ephemeral=True, sequence=True)
        zk.delete(node)
        samples.append(time.perf_counter() - s)
    stats("kazoo_raw_create_delete", samples, time.perf_counter() - t0)
    zk.stop()


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "hold":
        hold(sys.argv[2], sys.argv[3], float(sys.argv[4]) if len(sys.argv) > 4 else 10.0)
    elif cmd == "try":
        try_lock(sys.argv[2], sys.argv[3])
    elif cmd == "bench":
        bench(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        raise SystemExit(__doc__)
