#!/usr/bin/env bash
# Runs bench_held_leases (bench/held_leases.cpp) on every store of scripts/start-all-servers.sh:
# N leases of LEASE_S seconds held HOLD_S seconds, batched and single (the baseline) one after the
# other, then the same with N2 leases batched only. One output line per run (bench/README.md,
# "held leases").
#   bench/held_leases.sh [N] [N2] [LEASE_S] [HOLD_S] [stores...]
# BASELINE_BIN=path: also N leases batched with that binary (an older build: "before"), right
# after this build's batched run. ZK_HOLD_S (default HOLD_S): ZooKeeper's hold, 60 to be past the
# arming round of its session-level renewal (bench/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000}
N2=${2:-100000}
LEASE_S=${3:-30}
HOLD_S=${4:-25}
shift $(( $# < 4 ? $# : 4 ))
STORES=${*:-redis postgres mysql etcd zookeeper sqlite}
BIN=${BIN:-build/bench/bench_held_leases}
declare -A URI=(
  [redis]="redis://127.0.0.1:16379"
  [postgres]="postgresql://postgres@127.0.0.1:15432/leader_test?prefix=bench_held_"
  [mysql]="mysql://root@127.0.0.1:13306/leader_test?prefix=bench_held_"
  [etcd]="etcd://127.0.0.1:12379?prefix=/leader-bench-held"
  [zookeeper]="zk://127.0.0.1:12181?prefix=/leader-bench-held"
  [sqlite]="sqlite:///dev/shm/leader-bench-held.db"
)
for s in $STORES; do
  hold=$HOLD_S
  if [ "$s" = zookeeper ]; then hold=${ZK_HOLD_S:-$HOLD_S}; fi
  "$BIN" "${URI[$s]}" "$N" "$LEASE_S" "$hold" batched || echo "$s batched: exit $?"
  if [ -n "${BASELINE_BIN:-}" ]; then
    echo "# $s: the same with $BASELINE_BIN"
    "$BASELINE_BIN" "${URI[$s]}" "$N" "$LEASE_S" "$hold" batched || echo "$s baseline: exit $?"
  fi
  "$BIN" "${URI[$s]}" "$N" "$LEASE_S" "$HOLD_S" single || echo "$s single: exit $?"
  if [ "$N2" -gt 0 ]; then
    "$BIN" "${URI[$s]}" "$N2" "$LEASE_S" "$hold" batched || echo "$s batched $N2: exit $?"
  fi
  rm -f /dev/shm/leader-bench-held.db*
done
rm -f /dev/shm/leader-bench-held.db*
