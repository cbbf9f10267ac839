#!/usr/bin/python3
"""Server-side cost per lease (issue 14 target 7; bench/README.md "server-side cost per lease").

  bench/lease_cost.py [N] [STORE...]     (N = 1000; stores: redis postgres mariadb sqlite etcd zookeeper)

For each store, `bench_peers hold` (our library, bare LeaseStore) acquires N locks at once (lease
60 s), then renews each once, then releases all; between the steps this script reads the server's
own accounting: Redis MEMORY USAGE per key and INFO used_memory, PostgreSQL pg_total_relation_size /
pg_column_size, MariaDB information_schema.TABLES (after ANALYZE TABLE), SQLite page_count and
dbstat, etcd revision / key count / db size (endpoint status), ZooKeeper znodes and bytes under the
store's prefix (and mntr). Names carry this process's id (prefix cost<id>); everything the run
created is removed at the end (tables, procedures, keys, znodes, the SQLite file). Uses the shared
test servers (scripts/test-servers.sh): other people's writes are in the server-wide figures
(used_memory, revision, db size, mntr), not in the per-key / per-table ones.
Needs /usr/bin/python3 with Debian's python3-redis and python3-kazoo; build/bench/bench_peers.
"""
import base64
import json
import os
import socket
import subprocess
import sys

BUILD = os.environ.get("BUILD", "build")
PEERS = os.path.join(BUILD, "bench", "bench_peers")
ID = os.getpid()
N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
STORES = sys.argv[2:] or ["redis", "postgres", "mariadb", "sqlite", "etcd", "zookeeper"]
PG = "postgresql://postgres@127.0.0.1:15432/leader_test"
ETCD = "127.0.0.1:12379"
ZK = "127.0.0.1:12181"


class Holder:
    """bench_peers hold: N leases held; renew() and release() step it."""

    def __init__(self, uri, prefix):
        self.p = subprocess.Popen([PEERS, "hold", uri, prefix, str(N), "60"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        self.expect("HELD")

    def expect(self, word):
        line = self.p.stdout.readline().split()
        if not line or line[0] != word or int(line[1]) != N:
            raise SystemExit(f"bench_peers hold: expected {word} {N}, got {line}")

    def renew(self):
        self.p.stdin.write("renew\n")
        self.p.stdin.flush()
        self.expect("RENEWED")

    def release(self):
        self.p.stdin.write("release\n")
        self.p.stdin.flush()
        self.expect("RELEASED")
        self.p.wait()


def row(store, figure, value):
    print(f"| {store} | {figure} | {value} |", flush=True)


def per(x):
    return f"{x / N:,.1f}"


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


# ---- Redis -----------------------------------------------------------------------------------
def redis_cost():
    import redis
    r = redis.Redis(host="127.0.0.1", port=16379)
    prefix = f"cost{ID}:"

    def keys():
        return list(r.scan_iter(match=f"*cost{ID}:*", count=1000))

    def usage(ks):
        pipe = r.pipeline(transaction=False)
        for k in ks:
            pipe.memory_usage(k, samples=0)
        return dict(zip(ks, pipe.execute()))

    try:
        m0 = r.info("memory")["used_memory"]
        h = Holder(f"redis://127.0.0.1:16379?prefix={prefix}", "l")
        m1 = r.info("memory")["used_memory"]
        u = usage(keys())
        kinds = {}
        for k, v in u.items():
            kind = k.decode().split("}:")[1] if b"}:" in k else "lease"
            kinds.setdefault(kind, []).append(v)
        row("redis", "keys per held lease", f"{len(u) / N:g} ({', '.join(sorted(kinds))})")
        for kind, vs in sorted(kinds.items()):
            row("redis", f"MEMORY USAGE of `{kind}` key (mean, bytes)", f"{sum(vs) / len(vs):,.0f}")
        row("redis", "MEMORY USAGE of one lease's keys (bytes)", per(sum(u.values())))
        row("redis", "INFO used_memory delta / lease while held (bytes)", per(m1 - m0))
        h.renew()
        m2 = r.info("memory")["used_memory"]
        row("redis", "used_memory delta / lease after one renew of each (bytes)", per(m2 - m1))
        h.release()
        left = usage(keys())
        m3 = r.info("memory")["used_memory"]
        row("redis", "keys left per lock after release (persistent fence/size)", f"{len(left) / N:g}")
        row("redis", "MEMORY USAGE of those (bytes per lock)", per(sum(left.values())))
        row("redis", "used_memory delta / lock after release vs before (bytes)", per(m3 - m0))
    finally:
        ks = keys()
        for i in range(0, len(ks), 500):
            r.delete(*ks[i:i + 500])


# ---- PostgreSQL ------------------------------------------------------------------------------
def psql(sql):
    return run(["psql", "-q", PG, "-Atc", sql]).strip()


def pg_cost():
    prefix = f"cost{ID}_"
    try:
        h = Holder(f"{PG}?prefix={prefix}", "l")
        for t in ("leases", "fences"):
            n, total, col = psql(f"SELECT count(*), pg_total_relation_size('{prefix}{t}'),"
                                 f" avg(pg_column_size(x.*)) FROM {prefix}{t} x").split("|")
            row("postgres", f"`{t}`: rows while held / per lease", f"{int(n):,} / {int(n) / N:g}")
            row("postgres", f"`{t}`: pg_column_size of a row (bytes)", f"{float(col):,.0f}")
            row("postgres", f"`{t}`: pg_total_relation_size / lease (bytes, heap + indexes)",
                per(int(total)))
        h.renew()
        n = psql(f"SELECT pg_total_relation_size('{prefix}leases')")
        row("postgres", "`leases` total size / lease after one renew of each (bytes; dead tuples"
            " until vacuum)", per(int(n)))
        h.release()
        left = psql(f"SELECT (SELECT count(*) FROM {prefix}leases), (SELECT count(*) FROM "
                    f"{prefix}fences)").split("|")
        row("postgres", "rows left after release: leases / fences (the fence counter persists)",
            f"{int(left[0]):,} / {int(left[1]):,}")
    finally:
        tables = psql(f"SELECT string_agg(quote_ident(tablename), ', ') FROM pg_tables"
                      f" WHERE tablename LIKE 'cost{ID}\\_%'")
        if tables:
            psql(f"DROP TABLE {tables}")


# ---- MariaDB ---------------------------------------------------------------------------------
def my(sql):
    return run(["mariadb", "--no-defaults", "-h", "127.0.0.1", "-P", "13306", "-u", "root",
                "-N", "-B", "leader_test", "-e", sql]).strip()


def mariadb_cost():
    prefix = f"cost{ID}_"
    try:
        h = Holder(f"mysql://root@127.0.0.1:13306/leader_test?prefix={prefix}", "l")
        for t in ("leases", "fences"):
            my(f"ANALYZE TABLE {prefix}{t}")
            n = int(my(f"SELECT count(*) FROM {prefix}{t}"))
            data, index, avg = my(
                "SELECT data_length, index_length, avg_row_length FROM information_schema.TABLES"
                f" WHERE table_schema = 'leader_test' AND table_name = '{prefix}{t}'").split()
            row("mariadb", f"`{t}`: rows while held / per lease", f"{n:,} / {n / N:g}")
            row("mariadb", f"`{t}`: avg_row_length (bytes, InnoDB estimate)", f"{int(avg):,}")
            row("mariadb", f"`{t}`: (data_length + index_length) / lease (bytes, 16 KiB pages)",
                per(int(data) + int(index)))
        h.renew()
        h.release()
        left = my(f"SELECT (SELECT count(*) FROM {prefix}leases), (SELECT count(*) FROM "
                  f"{prefix}fences)").split()
        row("mariadb", "rows left after release: leases / fences", f"{int(left[0]):,} / {int(left[1]):,}")
    finally:
        for t in my("SELECT table_name FROM information_schema.TABLES WHERE table_schema ="
                    f" 'leader_test' AND table_name LIKE 'cost{ID}\\_%'").split():
            my(f"DROP TABLE `{t}`")
        for p in my("SELECT routine_name FROM information_schema.ROUTINES WHERE routine_schema ="
                    f" 'leader_test' AND routine_name LIKE 'cost{ID}\\_%'").split():
            my(f"DROP PROCEDURE `{p}`")


# ---- SQLite ----------------------------------------------------------------------------------
def sqlite_cost():
    path = f"/tmp/leader-cost-{ID}.db"

    def q(sql):
        return run(["sqlite3", path, sql]).strip()

    try:
        h = Holder(f"sqlite://{path}", "l")
        pages, size = int(q("PRAGMA page_count")), int(q("PRAGMA page_size"))
        row("sqlite", "database pages x page size / lease while held (bytes, WAL included)",
            per(pages * size))
        for line in q("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY name").splitlines():
            name, b = line.split("|")
            if "leases" in name or "fences" in name:
                row("sqlite", f"dbstat `{name}` / lease (bytes)", per(int(b)))
        h.renew()
        h.release()
        row("sqlite", "rows left after release: leases / fences",
            q("SELECT (SELECT count(*) FROM leader_leases) || ' / ' || (SELECT count(*) FROM leader_fences)"))
    finally:
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)


# ---- etcd ------------------------------------------------------------------------------------
def etcdctl(*args):
    return run(["etcdctl", f"--endpoints=http://{ETCD}", *args])


def etcd_status():
    s = json.loads(etcdctl("endpoint", "status", "-w", "json"))[0]["Status"]
    return int(s["header"]["revision"]), int(s["dbSize"]), int(s.get("dbSizeInUse", 0))


def etcd_cost():
    prefix = f"/cost{ID}"
    try:
        r0, d0, u0 = etcd_status()
        leases0 = len(etcdctl("lease", "list").splitlines())
        h = Holder(f"etcd://{ETCD}?prefix={prefix}", "l")
        r1, d1, u1 = etcd_status()
        keys = int(json.loads(etcdctl("get", "--prefix", prefix + "/", "--keys-only", "-w", "json"))
                   .get("count", 0))
        leases1 = len(etcdctl("lease", "list").splitlines())
        out = json.loads(etcdctl("get", "--prefix", prefix + "/", "-w", "json"))
        kv_bytes = sum(len(base64.b64decode(kv["key"])) + len(base64.b64decode(kv.get("value", "")))
                       for kv in out["kvs"])
        row("etcd", "keys per held lease", f"{keys / N:g}")
        row("etcd", "leases per held lease (lease list delta; shared server)", f"{(leases1 - leases0) / N:g}")
        row("etcd", "key + value bytes per lease (base64-decoded)", per(kv_bytes))
        row("etcd", "revisions per acquire (shared server: an upper bound)", f"{(r1 - r0) / N:g}")
        row("etcd", "dbSize / dbSizeInUse delta per acquire (bytes)", f"{per(d1 - d0)} / {per(u1 - u0)}")
        h.renew()
        r2, d2, u2 = etcd_status()
        row("etcd", "revisions per renew", f"{(r2 - r1) / N:g}")
        h.release()
        r3, d3, u3 = etcd_status()
        left = int(json.loads(etcdctl("get", "--prefix", prefix, "--keys-only", "-w", "json"))
                   .get("count", 0))
        row("etcd", "revisions per release", f"{(r3 - r2) / N:g}")
        row("etcd", "revisions per acquire + renew + release", f"{(r3 - r0) / N:g}")
        row("etcd", "dbSize delta per lease after the whole cycle (bytes; history until compaction)",
            per(d3 - d0))
        row("etcd", "keys left after release", f"{left}")
    finally:
        etcdctl("del", "--prefix", prefix)


# ---- ZooKeeper -------------------------------------------------------------------------------
def mntr():
    with socket.create_connection(("127.0.0.1", 12181), timeout=5) as s:
        s.sendall(b"mntr")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return {k: v for k, v in (line.split("\t", 1) for line in data.decode().splitlines() if "\t" in line)}


def zk_cost():
    from kazoo.client import KazooClient
    prefix = f"/cost{ID}"
    zk = KazooClient(hosts=ZK, timeout=10.0)
    zk.start(timeout=10)

    def walk(path):
        count, nbytes, eph = 0, 0, 0
        stack = [path]
        while stack:
            p = stack.pop()
            data, st = zk.get(p)
            count += 1
            nbytes += len(p) + st.dataLength
            eph += 1 if st.ephemeralOwner else 0
            stack.extend(f"{p}/{c}" for c in zk.get_children(p))
        return count, nbytes, eph

    try:
        m0 = mntr()
        h = Holder(f"zk://{ZK}?session_timeout=10s&prefix={prefix}", "l")
        m1 = mntr()
        count, nbytes, eph = walk(prefix)
        count -= 1  # the prefix node itself
        row("zookeeper", "znodes per held lease (lock directory + ephemeral-sequential node)",
            f"{count / N:g} ({eph / N:g} ephemeral)")
        row("zookeeper", "path + data bytes per held lease", per(nbytes))
        row("zookeeper", "mntr zk_znode_count / zk_approximate_data_size delta per lease (shared)",
            f"{per(int(m1['zk_znode_count']) - int(m0['zk_znode_count']))} / "
            f"{per(int(m1['zk_approximate_data_size']) - int(m0['zk_approximate_data_size']))}")
        h.renew()
        h.release()
        count2, nbytes2, eph2 = walk(prefix)
        row("zookeeper", "znodes left per lock after release (persistent lock directory)",
            f"{(count2 - 1) / N:g} ({eph2} ephemeral)")
    finally:
        if zk.exists(prefix):
            zk.delete(prefix, recursive=True)
        zk.stop()


def main():
    print(f"N = {N} leases held at once, {os.popen('date -u +%Y-%m-%dT%H:%MZ').read().strip()}",
          file=sys.stderr)
    print("| store | figure | value |")
    print("|---|---|---|")
    funcs = {"redis": redis_cost, "postgres": pg_cost, "mariadb": mariadb_cost,
             "sqlite": sqlite_cost, "etcd": etcd_cost, "zookeeper": zk_cost}
    for s in STORES:
        funcs[s]()


if __name__ == "__main__":
    main()
