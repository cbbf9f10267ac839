#!/usr/bin/env bash
# Peers side by side, same servers, same run (issue 14 target 6; bench/README.md "peers").
# Uncontended acquire + release per operation, one thread, for our library and CLI and for each
# peer against the SAME shared test server in the same run, plus each language's raw round trip:
#   Redis      ours (store, elector) | C++ PING | redis-py Lock, PING, SET NX+DEL
#              | npm redlock@4.2.0 on ioredis@6, ioredis PING, SET NX+DEL
#   ZooKeeper  ours (store, elector) | kazoo Lock, kazoo create+delete
#   etcd       ours (store, elector) | per process: etcdctl lock -- true, etcdctl put,
#              leader run --wait 0s -- true, leader --version
#   PostgreSQL ours (store, elector) | ShedLock-style SQL (libpq), libpq SELECT 1
# Starts no server: uses the shared ones (scripts/test-servers.sh, scripts/sql-setup.sh).
# Each row runs SECONDS (default 2); ROUNDS (default 3) interleaved rounds; the table shows the
# median of the rounds' p50 and mean. Names carry this process's id; everything written is
# removed at the end (also on failure).
#   bench/peers.sh [SECONDS] [ROUNDS]        (after: cmake --build build --target bench_peers leader)
# Environment: BUILD (default build), NPM_DIR (default /tmp/leader-peers-npm: npm redlock@4.2.0
# and ioredis@6 are installed there when missing, never into the repository).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-2}
ROUNDS=${2:-3}
BUILD=${BUILD:-build}
NPM_DIR=${NPM_DIR:-/tmp/leader-peers-npm}
PEERS=$BUILD/bench/bench_peers
CLI=$BUILD/tools/leader/leader
PY=/usr/bin/python3 # Debian's python3-redis / python3-kazoo (not the python3 first on PATH)
REDIS_PORT=16379
ZK=127.0.0.1:12181
ETCD=127.0.0.1:12379
PG=postgresql://postgres@127.0.0.1:15432/leader_test
ID=$$
for f in "$PEERS" "$CLI"; do [ -x "$f" ] || { echo "build $f first (cmake --build $BUILD --target bench_peers leader)" >&2; exit 2; }; done
if [ ! -d "$NPM_DIR/node_modules/redlock" ] || [ ! -d "$NPM_DIR/node_modules/ioredis" ]; then
  mkdir -p "$NPM_DIR"
  npm install --no-audit --no-fund --prefix "$NPM_DIR" redlock@4.2.0 ioredis@6 >&2
fi
export NODE_PATH=$NPM_DIR/node_modules

cleanup() {
  redis-cli -p $REDIS_PORT --scan --pattern "*peers-$ID*" | xargs -r redis-cli -p $REDIS_PORT del >/dev/null
  $PY bench/peers.py cleanup-kazoo 0 $ZK /peers-$ID >/dev/null 2>&1 || true
  $PY bench/peers.py cleanup-kazoo 0 $ZK /peers-$ID-kazoo >/dev/null 2>&1 || true
  etcdctl --endpoints=http://$ETCD del --prefix /peers-$ID >/dev/null || true
  psql -q "$PG" -Atc "SELECT 'DROP TABLE IF EXISTS ' || string_agg(quote_ident(tablename), ', ')
      FROM pg_tables WHERE tablename LIKE 'peers${ID}\_%'" | grep -v '^DROP TABLE IF EXISTS $' |
    psql -q "$PG" >/dev/null || true
}
trap cleanup EXIT

# group|row|command (the command prints "<row> n= mean_us= p50_us=" lines)
ROWS=$(cat <<ROWS
redis|ours_store|$PEERS ours-store redis://127.0.0.1:$REDIS_PORT?prefix=peers-$ID: $SECS lock
redis|ours_elector|$PEERS ours-elector redis://127.0.0.1:$REDIS_PORT?prefix=peers-$ID: $SECS run
redis|cpp_redis_ping|$PEERS redis-ping $REDIS_PORT $SECS
redis|redis_py_lock|$PY bench/peers.py redis-lock $SECS $REDIS_PORT peers-$ID-py
redis|redis_py_ping|$PY bench/peers.py redis-ping $SECS $REDIS_PORT
redis|redis_py_set_nx_del|$PY bench/peers.py redis-raw $SECS $REDIS_PORT peers-$ID-pyraw
redis|redlock|node bench/peers_redlock.js redlock $SECS $REDIS_PORT peers-$ID-js
redis|ioredis_ping|node bench/peers_redlock.js ping $SECS $REDIS_PORT peers-$ID-js
redis|ioredis_set_nx_del|node bench/peers_redlock.js raw $SECS $REDIS_PORT peers-$ID-jsraw
zookeeper|ours_store|$PEERS ours-store zk://$ZK?session_timeout=10s&prefix=/peers-$ID $SECS lock
zookeeper|ours_elector|$PEERS ours-elector zk://$ZK?session_timeout=10s&prefix=/peers-$ID $SECS run
zookeeper|kazoo_lock|$PY bench/peers.py kazoo-lock $SECS $ZK /peers-$ID-kazoo/lock
zookeeper|kazoo_create_delete|$PY bench/peers.py kazoo-raw $SECS $ZK /peers-$ID-kazoo/raw
etcd|ours_store|$PEERS ours-store etcd://$ETCD?prefix=/peers-$ID $SECS lock
etcd|ours_elector|$PEERS ours-elector etcd://$ETCD?prefix=/peers-$ID $SECS run
etcd|etcdctl_lock|$PEERS proc etcdctl_lock $SECS etcdctl --endpoints=http://$ETCD lock /peers-$ID/etcdctl -- true
etcd|etcdctl_put|$PEERS proc etcdctl_put $SECS etcdctl --endpoints=http://$ETCD put /peers-$ID-put/x y
etcd|leader_run|$PEERS proc leader_run $SECS $CLI run --store etcd://$ETCD?prefix=/peers-$ID --lock cli --wait 0s -- true
etcd|leader_version|$PEERS proc leader_version $SECS $CLI --version
postgres|ours_store|$PEERS ours-store $PG?prefix=peers${ID}_ $SECS lock
postgres|ours_elector|$PEERS ours-elector $PG?prefix=peers${ID}_ $SECS run
postgres|shedlock_sql|$PEERS shedlock $PG $SECS peers${ID}_shedlock
ROWS
)
OUT=$(mktemp /tmp/peers-XXXXXX.txt)
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg), ${SECS}s per row, $ROUNDS rounds" >&2
for r in $(seq "$ROUNDS"); do
  while IFS='|' read -r group row cmd; do
    # shellcheck disable=SC2086  # the command is word-split on purpose
    $cmd </dev/null | sed "s/^/$group $r /" >>"$OUT" || { echo "row $group/$row failed" >&2; exit 1; }
    # the ShedLock command also prints libpq_select1 (same connection)
  done <<<"$ROWS"
  echo "round $r done, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
$PY - "$OUT" <<'PY'
import re, statistics, sys
rows = {}
order = []
for line in open(sys.argv[1]):
    group, rnd, row, *kv = line.split()
    d = dict(x.split("=") for x in kv)
    key = (group, row)
    if key not in rows:
        rows[key] = []
        order.append(key)
    rows[key].append((float(d["p50_us"]), float(d["mean_us"]), int(d["n"])))
what = {
    "ours_store": "ours: bare LeaseStore try_acquire + release",
    "ours_elector": "ours: LeaderElector run_if_leader (no-op)",
    "cpp_redis_ping": "C++ PING, plain socket (round trip)",
    "redis_py_lock": "redis-py Lock acquire(blocking=False) + release",
    "redis_py_ping": "redis-py PING (round trip)",
    "redis_py_set_nx_del": "redis-py SET NX PX + DEL (2 round trips)",
    "redlock": "npm redlock@4.2.0 lock + unlock (ioredis@6)",
    "ioredis_ping": "ioredis PING (round trip)",
    "ioredis_set_nx_del": "ioredis SET NX PX + DEL (2 round trips)",
    "kazoo_lock": "kazoo Lock acquire(blocking=False) + release",
    "kazoo_create_delete": "kazoo create(ephemeral, sequence) + delete",
    "etcdctl_lock": "process: etcdctl lock K -- true",
    "etcdctl_put": "process: etcdctl put (start + connect + 1 write)",
    "leader_run": "process: leader run --wait 0s -- true",
    "leader_version": "process: leader --version (start only)",
    "shedlock_sql": "ShedLock SQL: UPDATE .. lock_until <= now() + unlock UPDATE",
    "libpq_select1": "libpq SELECT 1 (round trip)",
}
print("| store | row | p50 us | mean us | ops/s (1/mean) | ours store / row (p50) | ours elector / row (p50) |")
print("|---|---|---|---|---|---|---|")
med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
       for k, v in rows.items()}
for group, row in order:
    p50, mean = med[(group, row)]
    if row.startswith("leader_") or row.startswith("etcdctl"):
        r1, r2 = f"leader run / row: {med[(group, 'leader_run')][0] / p50:.2f}", ""
    else:
        r1 = f"{med[(group, 'ours_store')][0] / p50:.2f}"
        r2 = f"{med[(group, 'ours_elector')][0] / p50:.2f}"
    print(f"| {group} | {what.get(row, row)} | {p50:,.0f} | {mean:,.0f} | {1e6 / mean:,.0f} | {r1} | {r2} |")
PY
rm -f "$OUT"
