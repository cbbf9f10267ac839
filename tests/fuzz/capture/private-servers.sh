#!/usr/bin/env bash
# Captures the seed corpora from private, throwaway servers (no shared server, no lock): etcd,
# dynalite, ZooKeeper, PostgreSQL, MariaDB and Redis on ports 17800-17899, data under
# $CAPTURE_ROOT (default /tmp/leader-fuzz-capture). Every server is stopped by its PID on exit.
#   tests/fuzz/capture/private-servers.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
corpus=$here/../corpus
root=${CAPTURE_ROOT:-/tmp/leader-fuzz-capture}
npm=${LE_NPM_DIR:-/tmp/le-test/npm}
rm -rf "$root"; mkdir -p "$root"; chmod 755 "$root"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
  [ -f "$root/pg/data/postmaster.pid" ] && kill "$(head -1 "$root/pg/data/postmaster.pid")" 2> /dev/null || true
  sleep 1
  for p in "${pids[@]}"; do kill -9 "$p" 2> /dev/null || true; done
}
trap cleanup EXIT
wait_for() { for _ in $(seq 100); do "$@" > /dev/null 2>&1 && return 0; sleep 0.2; done; echo "not ready: $*" >&2; return 1; }
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

redis-server --bind 127.0.0.1 --port 17860 --save '' --appendonly no --dir "$root" > "$root/redis.log" 2>&1 &
pids+=($!)
etcd --name fz --data-dir "$root/etcd" --listen-client-urls http://127.0.0.1:17810 \
  --advertise-client-urls http://127.0.0.1:17810 --listen-peer-urls http://127.0.0.1:17811 \
  --initial-advertise-peer-urls http://127.0.0.1:17811 --initial-cluster fz=http://127.0.0.1:17811 \
  --heartbeat-interval 50 --election-timeout 250 > "$root/etcd.log" 2>&1 &
pids+=($!)
"$npm/node_modules/.bin/dynalite" --host 127.0.0.1 --port 17820 --createTableMs 0 \
  --deleteTableMs 0 --updateTableMs 0 > "$root/dynalite.log" 2>&1 &
pids+=($!)
mkdir -p "$root/zk/data"
printf 'tickTime=500\ndataDir=%s\nclientPort=17830\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\nforceSync=no\n' \
  "$root/zk/data" > "$root/zk/zoo.cfg"
java -Xmx128m -XX:+UseSerialGC -cp "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar" \
  org.apache.zookeeper.server.ZooKeeperServerMain "$root/zk/zoo.cfg" > "$root/zk.log" 2>&1 &
pids+=($!)
mkdir -p "$root/pg"; [ "$(id -u)" = 0 ] && chown postgres:postgres "$root/pg"
as_pg /usr/lib/postgresql/15/bin/initdb -D "$root/pg/data" -U postgres --auth=trust --no-sync > "$root/initdb.log" 2>&1
as_pg /usr/lib/postgresql/15/bin/pg_ctl -D "$root/pg/data" -l "$root/pg/pg.log" \
  -o "-c listen_addresses=127.0.0.1 -p 17840 -k $root/pg -c fsync=off" start > /dev/null
mkdir -p "$root/my"; my_user=(); [ "$(id -u)" = 0 ] && { chown mysql:mysql "$root/my"; my_user=(--user=mysql); }
mariadb-install-db --no-defaults "${my_user[@]}" --datadir="$root/my/data" --skip-test-db \
  --auth-root-authentication-method=normal > "$root/my-install.log" 2>&1
mariadbd --no-defaults "${my_user[@]}" --datadir="$root/my/data" --bind-address=127.0.0.1 \
  --port=17850 --socket="$root/my/sock" --pid-file="$root/my/pid" --skip-log-bin > "$root/my.log" 2>&1 &
pids+=($!)

wait_for redis-cli -p 17860 ping
wait_for etcdctl --endpoints=http://127.0.0.1:17810 endpoint health
wait_for bash -c 'exec 3<>/dev/tcp/127.0.0.1/17820'
wait_for bash -c 'exec 3<>/dev/tcp/127.0.0.1/17830'
wait_for /usr/lib/postgresql/15/bin/pg_isready -q -h 127.0.0.1 -p 17840
wait_for mariadb-admin --no-defaults -h 127.0.0.1 -P 17850 -u root ping

LEADER_CAPTURE_REDIS_PORT=17860 /usr/bin/python3 "$here/redis.py" "$corpus/fuzz_resp"
LEADER_CAPTURE_ETCD=http://127.0.0.1:17810 "$here/etcd.sh" "$corpus/fuzz_etcd_json"
LEADER_CAPTURE_DYNAMODB=http://127.0.0.1:17820 "$here/dynamodb.sh" "$corpus/fuzz_dynamodb_json"
LEADER_CAPTURE_ZK=127.0.0.1:17830 /usr/bin/python3 "$here/zookeeper.py" "$corpus/fuzz_zk_data"
LEADER_CAPTURE_PG_PORT=17840 LEADER_CAPTURE_PG_DB=postgres LEADER_CAPTURE_MY_PORT=17850 \
  LEADER_CAPTURE_MY_DB=mysql "$here/sql.sh" "$corpus/fuzz_sql_rows"
