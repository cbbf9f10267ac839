#!/usr/bin/env bash
# A PostgreSQL 15 primary with a streaming standby on 127.0.0.1, for the postgres store on a
# primary + standby topology (src/stores/postgres/README.md "Primary and standby"): the
# contract_postgres_standby suite and the failover scenarios of tests/faults/topology_postgres.py.
#   scripts/pg-standby.sh start     initdb node a (primary), database leader_test, node b from
#                                   `pg_basebackup -R` (standby), both started; idempotent
#   scripts/pg-standby.sh stop      both nodes stopped by PID ("fast" shutdown), data removed
#   scripts/pg-standby.sh promote N   `pg_ctl promote -w` of node N (a or b)
#   scripts/pg-standby.sh rebuild N   node N (stopped or crashed) re-made as a standby of the other
#                                     node by `pg_basebackup -R`, and started
#   scripts/pg-standby.sh status    prints "a PORT primary|standby|down" and the same for b
# Environment (defaults for the shared pair that scripts/start-all-servers.sh starts):
#   LE_PG_HA_DIR      data, sockets and logs (default $LE_TEST_ROOT/pg-ha, LE_TEST_ROOT=/tmp/le-test)
#   LE_PG_HA_PORTS    "A,B" ports of nodes a and b (default 15442,15443)
#   LE_PG_HA_SYNC     on: synchronous replication (synchronous_standby_names='*') with
#                     synchronous_commit=$LE_PG_HA_COMMIT (default on; remote_apply also works);
#                     off: asynchronous (synchronous_commit=on locally, no standby waited for)
#                     (default on for the shared pair)
#   LE_PG_HA_PIDS     where pg-ha-a.pid / pg-ha-b.pid go (default $LE_TEST_ROOT/pids, so
#                     `scripts/test-servers.sh stop`, CI's cleanup, stops them too)
# Throwaway data: fsync and full_page_writes off, as the shared server (replication still waits
# for the standby's flush/apply in sync mode, which is what a failover depends on).
set -euo pipefail
for fd in /proc/$$/fd/*; do  # servers must not inherit the caller's descriptors (flock)
  fd=${fd##*/}
  if [ "$fd" -gt 2 ] 2>/dev/null && [ "$fd" != 255 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
done
ROOT=${LE_TEST_ROOT:-/tmp/le-test}
DIR=${LE_PG_HA_DIR:-$ROOT/pg-ha}
PORTS=${LE_PG_HA_PORTS:-15442,15443}
PIDS=${LE_PG_HA_PIDS:-$ROOT/pids}
SYNC=${LE_PG_HA_SYNC:-on}
COMMIT=${LE_PG_HA_COMMIT:-on}
PGBIN=/usr/lib/postgresql/15/bin
port_of() { if [ "$1" = a ]; then echo "${PORTS%,*}"; else echo "${PORTS#*,}"; fi; }
other() { if [ "$1" = a ]; then echo b; else echo a; fi; }
is_root() { [ "$(id -u)" = 0 ]; }
as_pg() { if is_root; then runuser -u postgres -- "$@"; else "$@"; fi; }

node_pid() { [ -f "$DIR/$1/postmaster.pid" ] && head -1 "$DIR/$1/postmaster.pid" || true; }
running() { local p; p=$(node_pid "$1"); [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
role() {
  running "$1" || { echo down; return; }
  local r
  r=$("$PGBIN/psql" -XAtq -h 127.0.0.1 -p "$(port_of "$1")" -U postgres -d postgres \
        -c 'SELECT pg_is_in_recovery()' 2>/dev/null) || { echo down; return; }
  if [ "$r" = f ]; then echo primary; else echo standby; fi
}

start_node() {   # start_node N: pg_ctl start with the node's port, wait until it accepts
  local n=$1 port; port=$(port_of "$1")
  as_pg "$PGBIN/pg_ctl" -D "$DIR/$n" -l "$DIR/$n.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $DIR -c fsync=off -c full_page_writes=off" \
    start > /dev/null
  node_pid "$n" > "$PIDS/pg-ha-$n.pid"
}

sync_settings() {   # appended to postgresql.conf (copied by pg_basebackup to a rebuilt node)
  if [ "$SYNC" = on ]; then
    printf "synchronous_standby_names = '*'\nsynchronous_commit = %s\n" "$COMMIT"
  else
    printf "synchronous_standby_names = ''\nsynchronous_commit = on\n"
  fi
}

basebackup() {   # basebackup N FROM: node N's data from node FROM, as its standby
  local n=$1 from=$2
  rm -rf "${DIR:?}/$n"
  as_pg "$PGBIN/pg_basebackup" -h 127.0.0.1 -p "$(port_of "$from")" -U postgres -D "$DIR/$n" \
    -R -X stream --no-sync -c fast > "$DIR/$n-basebackup.log" 2>&1
  # Each node names itself to the primary, so pg_stat_replication tells them apart.
  echo "primary_conninfo = 'host=127.0.0.1 port=$(port_of "$from") user=postgres application_name=node_$n'" \
    >> "$DIR/$n/postgresql.auto.conf"
}

start() {
  local t0; t0=$(date +%s%N)
  mkdir -p "$DIR" "$PIDS"; chmod 755 "$DIR"; is_root && chown postgres:postgres "$DIR"
  if running a || running b; then echo "pg-standby: already running"; return 0; fi
  rm -rf "${DIR:?}/a" "${DIR:?}/b"
  as_pg "$PGBIN/initdb" -D "$DIR/a" -U postgres --auth=trust -E UTF8 --no-sync \
    > "$DIR/initdb.log" 2>&1
  cat >> "$DIR/a/postgresql.conf" <<EOF
wal_level = replica
max_wal_senders = 8
max_replication_slots = 8
wal_keep_size = 128MB
hot_standby = on
wal_receiver_status_interval = 1s
EOF
  start_node a
  "$PGBIN/psql" -XAtq -h 127.0.0.1 -p "$(port_of a)" -U postgres -d postgres \
    -c 'CREATE DATABASE leader_test' > /dev/null
  basebackup b a
  sync_settings | tee -a "$DIR/a/postgresql.conf" >> "$DIR/b/postgresql.conf"
  start_node b
  as_pg "$PGBIN/pg_ctl" -D "$DIR/a" reload > /dev/null
  wait_streaming a
  echo "pg-standby: primary 127.0.0.1:$(port_of a), standby 127.0.0.1:$(port_of b) (sync=$SYNC)," \
    "ready in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}

wait_streaming() {   # wait_streaming PRIMARY: until its standby streams (and, in sync mode, is sync)
  local want=streaming; [ "$SYNC" = on ] && want="streaming sync"
  for _ in $(seq 600); do
    local s
    s=$("$PGBIN/psql" -XAtq -F' ' -h 127.0.0.1 -p "$(port_of "$1")" -U postgres -d postgres \
          -c 'SELECT state, sync_state FROM pg_stat_replication' 2>/dev/null || true)
    case $s in "$want"*) return 0 ;; esac
    [ "$SYNC" != on ] && [[ $s == streaming* ]] && return 0
    sleep 0.05
  done
  echo "FAILED: the standby of node $1 does not stream (see $DIR/*.log)" >&2; return 1
}

stop_node() {
  local p; p=$(node_pid "$1")
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    kill -INT "$p"   # "fast" shutdown
    for _ in $(seq 200); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$p" 2>/dev/null && kill -KILL "$p"
    echo "stopped pg-ha-$1 ($p)"
  fi
  rm -f "$PIDS/pg-ha-$1.pid"
}

case ${1:-start} in
start) start ;;
stop)
  stop_node b; stop_node a
  [ "${LE_KEEP_DATA:-0}" = 1 ] || rm -rf "${DIR:?}/a" "${DIR:?}/b"
  ;;
promote)
  as_pg "$PGBIN/pg_ctl" -D "$DIR/$2" -w -t 60 promote > /dev/null
  ;;
rebuild)
  n=$2
  stop_node "$n" > /dev/null
  rm -f "$DIR/$n/postmaster.pid"
  basebackup "$n" "$(other "$n")"
  start_node "$n"
  wait_streaming "$(other "$n")"
  ;;
status)
  for n in a b; do echo "$n $(port_of $n) $(role $n)"; done
  ;;
*) echo "usage: $0 start|stop|promote a|b|rebuild a|b|status" >&2; exit 64 ;;
esac
