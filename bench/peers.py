#!/usr/bin/python3
"""Python peers of bench/peers.sh (Debian python3-redis and python3-kazoo; run with /usr/bin/python3).

  peers.py MODE SECONDS ARG...   runs MODE back to back for SECONDS (at least 20 times), prints
                                 "<row> n=<ops> mean_us=<mean> p50_us=<median>"
  redis-lock PORT NAME           redis.lock.Lock(NAME, timeout=30).acquire(blocking=False) + release()
  redis-ping PORT                PING (redis-py round trip)
  redis-raw PORT NAME            SET NAME token NX PX 30000 + DEL NAME (the lock's two round trips
                                 without the library's script)
  kazoo-lock HOSTS PATH          kazoo Lock(PATH).acquire(blocking=False) + release()
  kazoo-raw HOSTS PATH           create(PATH/raw-, ephemeral, sequence) + delete (kazoo round trips)
  cleanup-kazoo HOSTS PATH       delete PATH recursively
"""
import sys
import time


def timed(row, seconds, op):
    us = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(us) < 20:
        t0 = time.perf_counter()
        op()
        us.append((time.perf_counter() - t0) * 1e6)
    mean = sum(us) / len(us)
    us.sort()
    print(f"{row} n={len(us)} mean_us={mean:.1f} p50_us={us[len(us) // 2]:.1f}", flush=True)


def redis_client(port):
    import redis
    return redis.Redis(host="127.0.0.1", port=int(port))


def kazoo_client(hosts):
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=hosts, timeout=10.0)
    zk.start(timeout=10)
    return zk


def main():
    mode, seconds, args = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    if mode == "redis-lock":
        r = redis_client(args[0])

        def op():
            lock = r.lock(args[1], timeout=30)
            if not lock.acquire(blocking=False):
                raise SystemExit("redis-py Lock: the uncontended acquire was refused")
            lock.release()
        timed("redis_py_lock", seconds, op)
    elif mode == "redis-ping":
        r = redis_client(args[0])
        timed("redis_py_ping", seconds, r.ping)
    elif mode == "redis-raw":
        r = redis_client(args[0])

        def op():
            if not r.set(args[1], b"token", nx=True, px=30000):
                raise SystemExit("redis-py SET NX: refused")
            r.delete(args[1])
        timed("redis_py_set_nx_del", seconds, op)
    elif mode == "kazoo-lock":
        zk = kazoo_client(args[0])
        zk.ensure_path(args[1])

        def op():
            lock = zk.Lock(args[1], "peers")
            if not lock.acquire(blocking=False):
                raise SystemExit("kazoo Lock: the uncontended acquire was refused")
            lock.release()
        timed("kazoo_lock", seconds, op)
        zk.stop()
    elif mode == "kazoo-raw":
        zk = kazoo_client(args[0])
        zk.ensure_path(args[1])

        def op():
            zk.delete(zk.create(args[1] + "/raw-", b"", ephemeral=True, sequence=True))
        timed("kazoo_create_delete", seconds, op)
        zk.stop()
    elif mode == "cleanup-kazoo":
        zk = kazoo_client(args[0])
        zk.delete(args[1], recursive=True) if zk.exists(args[1]) else None
        zk.stop()
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
