#!/usr/bin/env bash
# A private set of the test servers for long fault runs (the soak), so that they neither wait for
# nor disturb the shared ones: scripts/test-servers.sh copied with every port moved into a range of
# the caller's (default 17710-17716), data, logs and PIDs under $LE_TEST_ROOT (default
# /tmp/leader-faults/servers), the SQL databases created by scripts/sql-setup.sh.
#   tests/faults/private_servers.sh start [BASE]   prints the LEADER_FAULTS_* exports to eval
#   tests/faults/private_servers.sh stop            stops them by PID
# tests/faults/server_fault.sh restarts a private server with the private copy ($ROOT/test-servers.sh).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
export LE_TEST_ROOT=${LE_TEST_ROOT:-/tmp/leader-faults/servers}
export LE_NPM_DIR=${LE_NPM_DIR:-/tmp/le-test/npm}   # dynalite's npm install, shared read-only
cmd=${1:-start}
base=${2:-17710}
redis=$base pg=$((base + 1)) my=$((base + 2)) etcd=$((base + 3)) peer=$((base + 4)) zk=$((base + 5))
dyn=$((base + 6))
script="$LE_TEST_ROOT/test-servers.sh"
mkdir -p "$LE_TEST_ROOT"
case $cmd in
start)
  sed -e "s/16379/$redis/g; s/15432/$pg/g; s/13306/$my/g; s/12379/$etcd/g; s/12380/$peer/g" \
      -e "s/12181/$zk/g; s/18000/$dyn/g; s/16380/$((base + 7))/g" \
      "$REPO/scripts/test-servers.sh" > "$script"
  cp "$REPO/scripts/ramdisk.sh" "$LE_TEST_ROOT/"  # sourced by the copy, from its own folder
  chmod +x "$script"
  "$script" start redis postgres mariadb etcd zookeeper >&2
  LE_PG_PORT=$pg LE_MARIADB_PORT=$my "$REPO/scripts/sql-setup.sh" start >&2
  echo "export LE_TEST_ROOT=$LE_TEST_ROOT LE_NPM_DIR=$LE_NPM_DIR LEADER_FAULTS_REDIS=127.0.0.1:$redis" \
       "LEADER_FAULTS_POSTGRES=127.0.0.1:$pg LEADER_FAULTS_MYSQL=127.0.0.1:$my" \
       "LEADER_FAULTS_ETCD=127.0.0.1:$etcd LEADER_FAULTS_ZOOKEEPER=127.0.0.1:$zk" \
       "LEADER_FAULTS_PRIVATE=1"
  ;;
stop) [ -x "$script" ] && "$script" stop >&2 ;;
*) echo "usage: $0 start [BASE] | stop" >&2; exit 64 ;;
esac
