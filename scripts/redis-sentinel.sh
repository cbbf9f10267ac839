#!/usr/bin/env bash
# A Redis Sentinel topology on 127.0.0.1 for the Redis store (issue 15): 1 primary, 1 replica,
# 3 Sentinels monitoring master 'leader-test' (quorum 2), data, logs and PIDs under $LE_TEST_ROOT.
#   scripts/redis-sentinel.sh start     (re)start all five and wait until the Sentinels agree
#   scripts/redis-sentinel.sh stop      stop them by PID, remove the data
#   scripts/redis-sentinel.sh primary   print the port of the current primary (asks a Sentinel)
#   scripts/redis-sentinel.sh ports     print "primary replica sentinel1 sentinel2 sentinel3" (as started)
#   scripts/redis-sentinel.sh server-start r0|r1 PORT   (re)start data server r0 (port base) or r1
#                                       (base+1), empty, as a replica of 127.0.0.1:PORT (fault suite)
# Ports (LE_REDIS_SENTINEL_BASE, default 22600, as the fault suite's private copies change):
# primary base, replica base+1, Sentinels base+10..base+12. No persistence (--save ''), as the
# shared test server; --repl-diskless-sync-delay 0: a demoted primary resyncs at once (the
# default waits 5 s, and a failover right after one then aborts). Sentinels: down-after-milliseconds 1000, failover-timeout 3000. The store's
# URI: redis-sentinel://127.0.0.1:22610,127.0.0.1:22611,127.0.0.1:22612/leader-test
# scripts/test-servers.sh stop stops them too (their PID files are in $LE_TEST_ROOT/pids).
set -euo pipefail
for fd in /proc/$$/fd/*; do  # servers must not inherit a caller's flock descriptor
  fd=${fd##*/}
  if [ "$fd" -gt 2 ] 2>/dev/null && [ "$fd" != 255 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
done
ROOT=${LE_TEST_ROOT:-/tmp/le-test}
BASE=${LE_REDIS_SENTINEL_BASE:-22600}
NAME=leader-test
DIR=$ROOT/redis-sentinel-$BASE
TAG=redis-sentinel-$BASE
DOWN_AFTER=${LE_REDIS_SENTINEL_DOWN_AFTER_MS:-1000}
SENTINEL_BIN=$(command -v redis-sentinel || true)

stop() {  # SIGKILL, all at once: nothing is persisted, and SIGTERM takes ~2 s per process here
  local f pid
  for f in "$ROOT"/pids/"$TAG"-*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    rm -f "$f"
  done
  rm -rf "$DIR"
}

start_server() {  # start_server NAME PORT [replicaof args]
  local n=$1 port=$2; shift 2
  mkdir -p "$DIR/$n"
  redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$DIR/$n" \
    --repl-diskless-sync-delay 0 \
    --daemonize yes --pidfile "$ROOT/pids/$TAG-$n.pid" --logfile "$ROOT/logs/$TAG-$n.log" "$@"
}

myid() { printf '%040x' $((BASE * 10 + $1)); }  # a fixed Sentinel run id per port

start_sentinel() {  # start_sentinel I
  local i=$1 port=$((BASE + 9 + $1)) conf="$DIR/sentinel-$1.conf"
  cat > "$conf" <<CONF
bind 127.0.0.1
port $port
daemonize yes
pidfile $ROOT/pids/$TAG-s$i.pid
logfile $ROOT/logs/$TAG-s$i.log
dir $DIR
sentinel monitor $NAME 127.0.0.1 $BASE 2
sentinel down-after-milliseconds $NAME $DOWN_AFTER
sentinel failover-timeout $NAME 3000
sentinel parallel-syncs $NAME 1
sentinel myid $(myid "$i")
sentinel known-replica $NAME 127.0.0.1 $((BASE + 1))
CONF
  for j in 1 2 3; do  # known up front: discovering each other by hello messages takes seconds
    [ "$j" = "$i" ] || echo "sentinel known-sentinel $NAME 127.0.0.1 $((BASE + 9 + j)) $(myid "$j")" >> "$conf"
  done
  if [ -n "$SENTINEL_BIN" ]; then "$SENTINEL_BIN" "$conf"; else redis-server "$conf" --sentinel; fi
}

sentinel_ready() {  # every Sentinel knows the primary, the replica and the other two Sentinels
  for i in 1 2 3; do
    local out
    out=$(redis-cli -p $((BASE + 9 + i)) sentinel master "$NAME" 2>/dev/null | tr '\n' ' ') || return 1
    [[ $out =~ num-slaves\ 1\  ]] && [[ $out =~ num-other-sentinels\ 2\  ]] || return 1
  done
}

start() {
  mkdir -p "$DIR" "$ROOT/pids" "$ROOT/logs"
  local t0; t0=$(date +%s%N)
  start_server r0 "$BASE"
  start_server r1 $((BASE + 1)) --replicaof 127.0.0.1 "$BASE"
  for i in 1 2 3; do start_sentinel "$i"; done
  for _ in $(seq 300); do
    if sentinel_ready; then
      echo "redis-sentinel: started and ready in $(( ($(date +%s%N) - t0) / 1000000 )) ms" \
           "(primary $BASE, replica $((BASE + 1)), Sentinels $((BASE + 10))-$((BASE + 12)))"
      return 0
    fi
    sleep 0.05
  done
  echo "FAILED: redis-sentinel not ready (see $ROOT/logs/$TAG-*.log)" >&2
  return 1
}

case ${1:-start} in
start) stop; start ;;
stop) stop ;;
primary) redis-cli -p $((BASE + 10)) sentinel get-master-addr-by-name "$NAME" | tail -1 ;;
server-start)
  n=$2; port=$BASE; [ "$n" = r1 ] && port=$((BASE + 1))
  start_server "$n" "$port" --replicaof 127.0.0.1 "$3" ;;
ports) echo "$BASE $((BASE + 1)) $((BASE + 10)) $((BASE + 11)) $((BASE + 12))" ;;
*) echo "usage: $0 start|stop|primary|ports" >&2; exit 64 ;;
esac
