#!/usr/bin/env bash
# Throwaway loopback-only test servers for the contract and integration suites (no systemd).
# Data, logs and PIDs go under $LE_TEST_ROOT (default /tmp/le-test).
#   scripts/test-servers.sh start [server...]   start (all by default) and wait until ready
#   scripts/test-servers.sh stop                 stop what start started, by PID
# Ports:
#   redis 127.0.0.1:16379   postgres 127.0.0.1:15432   mariadb 127.0.0.1:13306
#   etcd  127.0.0.1:12379 (peer 12380)   zookeeper 127.0.0.1:12181
#   dynalite (DynamoDB API) 127.0.0.1:18000
#   consul: the Consul HTTP API double (tests/doubles/consul, not a real Consul) 127.0.0.1:18500
#   k8s (Kubernetes Lease API double, tests/doubles/k8s) 127.0.0.1:16443
#   mongodb (mongomock behind an OP_MSG shim, tests/doubles/mongodb; in memory) 127.0.0.1:17017
#     ($LE_MONGODB_PORT overrides the port of a private instance)
set -euo pipefail
# Servers must not inherit descriptors of the caller: run under `flock LOCK scripts/...`, a server
# started here would keep LOCK's descriptor open and hold the lock for its whole life (the lock
# stays held by flock itself until this script ends; only the servers' copies are closed).
for fd in /proc/$$/fd/*; do
  fd=${fd##*/}
  if [ "$fd" -gt 2 ] 2>/dev/null && [ "$fd" != 255 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
done
ROOT=${LE_TEST_ROOT:-/tmp/le-test}
# shellcheck source=scripts/ramdisk.sh
. "$(dirname "$0")/ramdisk.sh"
NPM_DIR=${LE_NPM_DIR:-$ROOT/npm}          # where dynalite gets npm-installed
REPO=$(cd "$(dirname "$0")/.." && pwd)

is_root() { [ "$(id -u)" = 0 ]; }
as_user() { local u=$1; shift; if is_root; then runuser -u "$u" -- "$@"; else "$@"; fi; }
wait_for() {   # wait_for NAME TIMEOUT_S CMD...
  local name=$1 to=$2; shift 2
  local deadline=$(( $(date +%s) + to ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "FAILED: $name not ready after ${to}s (see $ROOT/logs)" >&2; return 1
    fi
    sleep 0.05
  done
  echo "$name: started and ready in $(( ($(date +%s%N) - T0) / 1000000 )) ms"
}
# 'srvr' (not 'ruok'): ZooKeeper 3.8.0 can answer ruok while still loading and then never
# close the socket (NullPointerException in its log), which hangs a plain reader; so
# each probe has a timeout and checks for "Mode:", printed only once it serves requests.
zk_ready() {
  local out; out=$(timeout 2 bash -c 'exec 3<>/dev/tcp/127.0.0.1/12181 && printf srvr >&3 && cat <&3' 2>/dev/null)
  [[ $out == *"Mode: "* ]]
}
tcp_open() ( exec 3<>"/dev/tcp/127.0.0.1/$1" )


stop_all() {
  # Redis Sentinel and Cluster topologies: SIGKILLed at once by their scripts (SIGTERM costs ~2 s
  # per process)
  for f in "$ROOT"/pids/redis-sentinel-*-r0.pid; do
    [ -f "$f" ] || continue
    b=${f##*/redis-sentinel-}; LE_REDIS_SENTINEL_BASE=${b%-r0.pid} "$(dirname "$0")/redis-sentinel.sh" stop
  done
  for f in "$ROOT"/pids/redis-cluster-*-n0.pid; do
    [ -f "$f" ] || continue
    b=${f##*/redis-cluster-}; LE_REDIS_CLUSTER_BASE=${b%-n0.pid} "$(dirname "$0")/redis-cluster.sh" stop
  done
  for f in "$ROOT"/pids/*.pid; do
    [ -f "$f" ] || continue
    name=$(basename "$f" .pid); pid=$(cat "$f")
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      sig=TERM; case $name in postgres|pg-ha-*) sig=INT ;; esac   # INT = postgres "fast" shutdown
      kill -"$sig" "$pid"
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && { echo "$name ($pid) did not stop, sending KILL"; kill -KILL "$pid"; }
      echo "stopped $name ($pid)"
    fi
    rm -f "$f"
  done
  [ "${LE_KEEP_DATA:-0}" = 1 ] || rm_data "$ROOT/redis" "$ROOT/pg" "$ROOT/mariadb" "$ROOT/etcd" "$ROOT/zk" \
    "$ROOT/etcd-cluster" "$ROOT/zk-ensemble" "$ROOT/etcd-tls/data" \
    "$ROOT/etcd-tls/auth-ready"  # etcd-tls: its certs stay
}

cmd=${1:-start}; shift || true
case $cmd in
stop) stop_all; exit 0 ;;
start) ;;
*) echo "usage: $0 start [redis postgres mariadb etcd zookeeper dynalite consul k8s mongodb] | stop" >&2; exit 64 ;;
esac
SERVERS=${*:-${LE_SERVERS:-"redis postgres mariadb etcd zookeeper dynalite consul k8s mongodb"}}
mkdir -p "$ROOT/pids" "$ROOT/logs"
chmod 755 "$ROOT"
running() { local f="$ROOT/pids/$1.pid"; [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }
for s in $SERVERS; do T0=$(date +%s%N)
  if running "$s"; then echo "$s: already running"; continue; fi
  case $s in
redis)
  mkdir -p "$ROOT/redis"
  redis-server --bind 127.0.0.1 --port 16379 --save '' --appendonly no \
    --dir "$ROOT/redis" --daemonize yes \
    --pidfile "$ROOT/pids/redis.pid" --logfile "$ROOT/logs/redis.log"
  wait_for redis 10 sh -c 'redis-cli -h 127.0.0.1 -p 16379 ping | grep -q PONG'
  ;;
postgres)
  PGBIN=/usr/lib/postgresql/15/bin
  mkdir -p "$ROOT/pg"; is_root && chown postgres:postgres "$ROOT/pg"
  [ -f "$ROOT/pg/data/PG_VERSION" ] ||
    as_user postgres "$PGBIN/initdb" -D "$ROOT/pg/data" -U postgres --auth=trust \
      -E UTF8 --no-sync > "$ROOT/logs/pg-initdb.log" 2>&1
  # fsync/full_page_writes off: throwaway data; drop them to measure durable latency
  as_user postgres "$PGBIN/pg_ctl" -D "$ROOT/pg/data" -l "$ROOT/pg/postgres.log" \
    -o "-c listen_addresses=127.0.0.1 -p 15432 -k $ROOT/pg -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    start > /dev/null
  wait_for postgres 30 "$PGBIN/pg_isready" -q -h 127.0.0.1 -p 15432
  head -1 "$ROOT/pg/data/postmaster.pid" > "$ROOT/pids/postgres.pid"
  ;;
mariadb)
  mkdir -p "$ROOT/mariadb"; is_root && chown mysql:mysql "$ROOT/mariadb"
  USER_OPT=(); is_root && USER_OPT=(--user=mysql)
  [ -d "$ROOT/mariadb/data/mysql" ] ||
    mariadb-install-db --no-defaults "${USER_OPT[@]}" --datadir="$ROOT/mariadb/data" \
      --auth-root-authentication-method=normal --skip-test-db --skip-name-resolve \
      > "$ROOT/logs/mariadb-install.log" 2>&1
  nohup mariadbd --no-defaults "${USER_OPT[@]}" --datadir="$ROOT/mariadb/data" \
    --bind-address=127.0.0.1 --port=13306 --socket="$ROOT/mariadb/mysqld.sock" \
    --pid-file="$ROOT/mariadb/mysqld.pid" --log-error="$ROOT/logs/mariadb.log" \
    --innodb-buffer-pool-size=64M --skip-log-bin --innodb-flush-log-at-trx-commit=2 \
    > /dev/null 2>&1 &
  echo $! > "$ROOT/pids/mariadb.pid"
  wait_for mariadb 30 mariadb-admin --no-defaults -h 127.0.0.1 -P 13306 -u root ping
  ;;
etcd)
  # short election timeout: a fresh single member elects itself in ~0.3 s instead of ~1 s
  ram_dir "$ROOT/etcd/data"  # on tmpfs: scripts/ramdisk.sh
  nohup etcd --name le1 --data-dir "$ROOT/etcd/data" \
    --listen-client-urls http://127.0.0.1:12379 --advertise-client-urls http://127.0.0.1:12379 \
    --listen-peer-urls http://127.0.0.1:12380 --initial-advertise-peer-urls http://127.0.0.1:12380 \
    --initial-cluster le1=http://127.0.0.1:12380 --initial-cluster-state new \
    --heartbeat-interval 50 --election-timeout 250 \
    --logger zap --log-outputs stderr > "$ROOT/logs/etcd.log" 2>&1 &
  echo $! > "$ROOT/pids/etcd.pid"
  wait_for etcd 30 etcdctl --endpoints=http://127.0.0.1:12379 endpoint health
  ;;
zookeeper)
  mkdir -p "$ROOT/zk/conf" "$ROOT/zk/data"
  cat > "$ROOT/zk/conf/zoo.cfg" <<EOF
tickTime=500
minSessionTimeout=1000
maxSessionTimeout=30000
dataDir=$ROOT/zk/data
clientPort=12181
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr,cons
maxClientCnxns=0
forceSync=no
EOF
  cat > "$ROOT/zk/conf/log4j.properties" <<'EOF'
log4j.rootLogger=INFO,CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1} - %m%n
EOF
  # LEADER_ZK_HEAP: the JVM heap (256m for the tests; bench/held_leases.sh's 100,000-lease row
  # needs more: 100,000 ephemeral nodes with a data watch each did not fit in 256m).
  nohup java -Xmx"${LEADER_ZK_HEAP:-256m}" -XX:+UseSerialGC \
    -cp "$ROOT/zk/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar" \
    org.apache.zookeeper.server.ZooKeeperServerMain "$ROOT/zk/conf/zoo.cfg" \
    > "$ROOT/logs/zookeeper.log" 2>&1 &
  echo $! > "$ROOT/pids/zookeeper.pid"
  wait_for zookeeper 30 zk_ready
  ;;
dynalite)
  if [ ! -x "$NPM_DIR/node_modules/.bin/dynalite" ]; then
    mkdir -p "$NPM_DIR"
    npm install --prefix "$NPM_DIR" --no-audit --no-fund dynalite@4.0.0 > "$ROOT/logs/npm-dynalite.log" 2>&1
  fi
  nohup "$NPM_DIR/node_modules/.bin/dynalite" --host 127.0.0.1 --port 18000 \
    --createTableMs 0 --deleteTableMs 0 --updateTableMs 0 > "$ROOT/logs/dynalite.log" 2>&1 &
  echo $! > "$ROOT/pids/dynalite.pid"
  wait_for dynalite 20 tcp_open 18000
  ;;
consul)
  # In memory (nothing to keep under $ROOT but its log). Sessions end exactly one TTL after the
  # last renew (the earliest Consul promises; real Consul waits up to 2x), session_ttl_min 100ms
  # so the contract's 1 s leases fit (Consul's default minimum is 10s).
  nohup python3 "$REPO/tests/doubles/consul/consul_double.py" --host 127.0.0.1 --port 18500 \
    --ttl-multiplier 1 --session-ttl-min 100ms > "$ROOT/logs/consul.log" 2>&1 &
  echo $! > "$ROOT/pids/consul.pid"
  wait_for consul 20 tcp_open 18500
  ;;
k8s)
  # The Kubernetes API double (Python 3 standard library; Debian's /usr/bin/python3).
  nohup /usr/bin/python3 "$REPO/tests/doubles/k8s/k8s_double.py" --host 127.0.0.1 \
    --port "${LE_K8S_PORT:-16443}" > "$ROOT/logs/k8s.log" 2>&1 &
  echo $! > "$ROOT/pids/k8s.pid"
  wait_for k8s 10 tcp_open "${LE_K8S_PORT:-16443}"
  ;;
mongodb)
  # Debian's /usr/bin/python3: python3-mongomock and python3-bson are installed for it.
  MONGODB_PORT=${LE_MONGODB_PORT:-17017}
  nohup /usr/bin/python3 "$REPO/tests/doubles/mongodb/shim.py" --host 127.0.0.1 \
    --port "$MONGODB_PORT" > "$ROOT/logs/mongodb.log" 2>&1 &
  echo $! > "$ROOT/pids/mongodb.pid"
  wait_for mongodb 20 tcp_open "$MONGODB_PORT"
  ;;
*) echo "unknown server: $s" >&2; exit 2 ;;
esac; done
