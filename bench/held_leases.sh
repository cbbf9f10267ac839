#!/usr/bin/env bash
# Runs bench_held_leases (bench/held_leases.cpp) on every store of scripts/start-all-servers.sh:
# N leases of LEASE_S seconds held HOLD_S seconds, batched and single (the baseline) one after the
# other, then the same with N2 leases batched only. One output line per run (bench/README.md,
# "held leases").
#   bench/held_leases.sh [N] [N2] [LEASE_S] [HOLD_S] [stores...]
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
  "$BIN" "${URI[$s]}" "$N" "$LEASE_S" "$HOLD_S" batched || echo "$s batched: exit $?"
  "$BIN" "${URI[$s]}" "$N" "$LEASE_S" "$HOLD_S" single || echo "$s single: exit $?"
  if [ "$N2" -gt 0 ]; then
    "$BIN" "${URI[$s]}" "$N2" "$LEASE_S" "$HOLD_S" batched || echo "$s batched $N2: exit $?"
  fi
done
rm -f /dev/shm/leader-bench-held.db*
