#!/usr/bin/env bash
# A Redis Cluster on 127.0.0.1 for the Redis store (issue 15): 3 primaries (no replicas), slots
# split by `redis-cli --cluster create`, data, logs and PIDs under $LE_TEST_ROOT.
#   scripts/redis-cluster.sh start   (re)start the three nodes and wait for cluster_state:ok
#   scripts/redis-cluster.sh stop    stop them by PID (SIGKILL: nothing is persisted), remove data
#   scripts/redis-cluster.sh ports   print the three ports
# Ports (LE_REDIS_CLUSTER_BASE, default 22700): base, base+1, base+2 (cluster bus: +10000).
# The store's URI: redis-cluster://127.0.0.1:22700,127.0.0.1:22701,127.0.0.1:22702
# scripts/test-servers.sh stop stops them too (their PID files are in $LE_TEST_ROOT/pids).
set -euo pipefail
for fd in /proc/$$/fd/*; do  # servers must not inherit a caller's flock descriptor
  fd=${fd##*/}
  if [ "$fd" -gt 2 ] 2>/dev/null && [ "$fd" != 255 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
done
ROOT=${LE_TEST_ROOT:-/tmp/le-test}
BASE=${LE_REDIS_CLUSTER_BASE:-22700}
DIR=$ROOT/redis-cluster-$BASE
TAG=redis-cluster-$BASE

stop() {
  local f pid
  for f in "$ROOT"/pids/"$TAG"-*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    rm -f "$f"
  done
  rm -rf "$DIR"
}

start() {
  mkdir -p "$DIR" "$ROOT/pids" "$ROOT/logs"
  local t0 nodes=() i port; t0=$(date +%s%N)
  for i in 0 1 2; do
    port=$((BASE + i))
    mkdir -p "$DIR/n$i"
    redis-server --bind 127.0.0.1 --port "$port" --cluster-enabled yes \
      --cluster-config-file "$DIR/n$i/nodes.conf" --cluster-node-timeout 2000 \
      --save '' --appendonly no --dir "$DIR/n$i" --daemonize yes \
      --pidfile "$ROOT/pids/$TAG-n$i.pid" --logfile "$ROOT/logs/$TAG-n$i.log"
    nodes+=("127.0.0.1:$port")
  done
  for _ in $(seq 100); do
    redis-cli -p $((BASE + 2)) ping 2>/dev/null | grep -q PONG && break
    sleep 0.05
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-yes > "$ROOT/logs/$TAG-create.log" 2>&1
  for _ in $(seq 200); do
    local ok=1
    for i in 0 1 2; do
      redis-cli -p $((BASE + i)) cluster info 2>/dev/null | grep -q 'cluster_state:ok' || ok=0
    done
    if [ $ok = 1 ]; then
      echo "redis-cluster: started and ready in $(( ($(date +%s%N) - t0) / 1000000 )) ms" \
           "(ports $BASE-$((BASE + 2)))"
      return 0
    fi
    sleep 0.05
  done
  echo "FAILED: redis-cluster not ready (see $ROOT/logs/$TAG-*.log)" >&2
  return 1
}

case ${1:-start} in
start) stop; start ;;
stop) stop ;;
ports) echo "$BASE $((BASE + 1)) $((BASE + 2))" ;;
*) echo "usage: $0 start|stop|ports" >&2; exit 64 ;;
esac
