#!/usr/bin/python3
"""The Python package (python/, cffi over libleader.so.0) against the Python locks people use and
against the C++ library, uncontended acquire + release, one thread, on the same servers in the
same run (bench/README.md "Python package"). Run with Debian's /usr/bin/python3 (python3-cffi,
python3-redis, python3-kazoo):

  bench/python_peers.py [SECONDS] [ROUNDS]    (after: cmake --build build --target leader_c bench_peers)

Each row is its own process and runs SECONDS (default 1); ROUNDS (default 11) interleaved
rounds, each running every row once (in reverse order every other round); the table shows the
median over the rounds of each row's p50 and mean, and each ratio is the median over the rounds
of the two rows' p50 in the same round (the servers and the machine are shared: a ratio of
neighbours in time is steadier than a ratio of medians). Rows per store (Redis, ZooKeeper,
PostgreSQL; and the in-process memory store: the binding's own cost, without a round trip):
  py_lead    with elector.lead(name) as ctx (wait=0, lease=30 s), nothing inside
  py_run     elector.run_if_leader(name, fn) with a no-op fn
  cpp_run    the C++ LeaderElector::run_if_leader, no-op (bench_peers ours-elector, same options)
  peer       redis-py Lock / kazoo Lock, acquire(blocking=False) + release (bench/peers.py)
Environment: BUILD (default build), LEADER_LIBRARY (default $BUILD/src/capi/libleader.so.0), ZK
(default 127.0.0.1:12181).
Names carry this process's id; what the rows wrote is removed at the end.

  python_peers.py row MODE SECONDS URI LOCK   one package row (MODE lead or run), used by the above
"""
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"
REDIS_PORT = 16379
ZK = os.environ.get("ZK", "127.0.0.1:12181")
PG = "postgresql://postgres@127.0.0.1:15432/leader_test"


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


def package_row(mode, seconds, uri, lock):
    import leader

    elector = leader.Elector(uri, wait=0, lease=30.0, node_id="peers")
    if mode == "lead":
        def op():
            with elector.lead(lock) as ctx:
                if not ctx:
                    raise SystemExit("py_lead: the uncontended acquire was refused")
        timed("py_lead", seconds, op)
    else:
        def op():
            if not elector.run_if_leader(lock, lambda ctx: None).ran:
                raise SystemExit("py_run: the uncontended run_if_leader was skipped")
        timed("py_run", seconds, op)


WHAT = {
    "py_lead": "**Python package**: with elector.lead() (acquire + release)",
    "py_run": "Python package: elector.run_if_leader(no-op)",
    "cpp_run": "C++ LeaderElector::run_if_leader (no-op)",
    "redis_py_lock": "redis-py Lock acquire(blocking=False) + release",
    "kazoo_lock": "kazoo Lock acquire(blocking=False) + release",
}


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 11
    build = os.environ.get("BUILD", os.path.join(ROOT, "build"))
    peers = os.path.join(build, "bench", "bench_peers")
    env = dict(os.environ)
    env.setdefault("LEADER_LIBRARY", os.path.join(build, "src", "capi", "libleader.so.0"))
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    for f in (peers, env["LEADER_LIBRARY"]):
        if not os.path.exists(f):
            sys.exit(f"build {f} first (cmake --build {build} --target leader_c bench_peers)")
    pid = os.getpid()
    me = os.path.abspath(__file__)
    uris = {
        "memory": "memory:",  # in-process: the binding's own cost, no round trip
        "redis": f"redis://127.0.0.1:{REDIS_PORT}?prefix=pypeers-{pid}:",
        "zookeeper": f"zk://{ZK}?session_timeout=10s&prefix=/pypeers-{pid}",
        "postgres": f"{PG}?prefix=pypeers{pid}_",
    }
    s = str(seconds)
    rows = []
    for group, uri in uris.items():
        rows += [
            (group, "py_lead", [PY, me, "row", "lead", s, uri, "lock"]),
            (group, "py_run", [PY, me, "row", "run", s, uri, "lock"]),
            (group, "cpp_run", [peers, "ours-elector", uri, s, "lock"]),
        ]
        if group == "redis":
            rows.append((group, "redis_py_lock", [PY, os.path.join(HERE, "peers.py"), "redis-lock",
                                                  s, str(REDIS_PORT), f"pypeers-{pid}-redis-py"]))
        if group == "zookeeper":
            rows.append((group, "kazoo_lock", [PY, os.path.join(HERE, "peers.py"), "kazoo-lock",
                                               s, ZK, f"/pypeers-{pid}-kazoo/lock"]))
    results = {}
    load = open("/proc/loadavg").read().split()[:3]
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {' '.join(load)}, "
          f"{seconds:g}s per row, {rounds} rounds", file=sys.stderr)
    done = 0
    try:
        for r in range(rounds):
            got = []
            try:
                for group, row, cmd in (rows if r % 2 == 0 else rows[::-1]):
                    line = run_row(cmd, env)
                    d = dict(x.split("=") for x in line[1:])
                    got.append(((group, row), (float(d["p50_us"]), float(d["mean_us"]))))
            except SystemExit:
                if done < 3:
                    raise
                print(f"round {r + 1} abandoned: the table has rounds 1-{done}", file=sys.stderr)
                break
            for key, value in got:  # a round counts whole or not at all
                results.setdefault(key, []).append(value)
            done += 1
            load = open("/proc/loadavg").read().split()[:3]
            print(f"round {r + 1} done, load average {' '.join(load)}", file=sys.stderr)
    finally:
        cleanup(pid)
    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
           for k, v in results.items()}

    def ratio(group, row, base):
        """The median over the rounds of row p50 / base p50 in the same round."""
        return statistics.median(a[0] / b[0] for a, b in
                                 zip(results[(group, row)], results[(group, base)]))

    print("| store | row | p50 us | mean us | row / Python lead (p50, median of rounds) |")
    print("|---|---|---|---|---|")
    for (group, row), (p50, mean) in med.items():
        print(f"| {group} | {WHAT[row]} | {p50:,.{1 if p50 < 100 else 0}f} | "
              f"{mean:,.{1 if mean < 100 else 0}f} | "
              f"{ratio(group, row, 'py_lead'):.2f} |")
    print()
    for group in uris:
        print(f"- {group}: over the C++ run_if_leader at p50 (median of the rounds' ratios): "
              f"Python run_if_leader {100 * (ratio(group, 'py_run', 'cpp_run') - 1):+.0f} %, "
              f"Python lead {100 * (ratio(group, 'py_lead', 'cpp_run') - 1):+.0f} % "
              f"({med[(group, 'py_lead')][0] - med[(group, 'cpp_run')][0]:+.1f} us)")
    for group, peer in (("redis", "redis_py_lock"), ("zookeeper", "kazoo_lock")):
        print(f"- {group}: {WHAT[peer]} / Python lead at p50 (median of the rounds' ratios): "
              f"{ratio(group, peer, 'py_lead'):.2f}x")


def run_row(cmd, env):
    """The row's result line; a row that fails (a store error: the servers are shared, and other
    users pause them) is run again, at most twice, saying so."""
    for attempt in range(3):
        run = subprocess.run(cmd, env=env, capture_output=True, text=True,
                             stdin=subprocess.DEVNULL)
        if run.returncode == 0:
            return run.stdout.strip().splitlines()[-1].split()
        print(f"row failed ({' '.join(cmd[1:4])}): {run.stderr.strip()[-300:]}", file=sys.stderr)
    raise SystemExit("a row failed three times")


def cleanup(pid):
    subprocess.run(f"redis-cli -p {REDIS_PORT} --scan --pattern '*pypeers-{pid}*' | "
                   f"xargs -r redis-cli -p {REDIS_PORT} del", shell=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for path in (f"/pypeers-{pid}", f"/pypeers-{pid}-kazoo"):
        subprocess.run([PY, os.path.join(HERE, "peers.py"), "cleanup-kazoo", "0", ZK, path],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sql = (f"SELECT 'DROP TABLE IF EXISTS ' || string_agg(quote_ident(tablename), ', ') "
           f"FROM pg_tables WHERE tablename LIKE 'pypeers{pid}\\_%'")
    drop = subprocess.run(["psql", "-q", PG, "-Atc", sql], capture_output=True, text=True).stdout
    if drop.strip() and drop.strip() != "DROP TABLE IF EXISTS":
        subprocess.run(["psql", "-q", PG, "-c", drop], stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "row":
        package_row(sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5])
    else:
        main()
