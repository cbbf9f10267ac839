#!/usr/bin/env bash
# The fault suite for one store (docs/faults.md). Needs the test servers of
# scripts/test-servers.sh (and scripts/sql-setup.sh for postgres/mysql) and a built fault_worker.
#   tests/faults/run.sh --store redis [--seconds 300] [--scenario mixed|clock-wall|clock-mono|
#                       restart|restart-rdb|restart-aof|group|extend|netns] [--workers 4]
#                       [--lease-ms 1500] [--seed N] [--no-server-faults] [--group N] [--extend]
#                       [--partition proxy|nft] [--redis-persist none|rdb|aof]
#                       [--worker path/to/fault_worker] [--out DIR]
#   tests/faults/run.sh --soak [--stores "sqlite redis ..."] [--terms 1000] [--out DIR]
#   tests/faults/run.sh --topology etcd-cluster|zookeeper-ensemble [--seconds 35] [--kinds K,...]
#                       (issue 15: failovers of a private 3-member cluster, topology.py)
#   tests/faults/run.sh --soak --topology T [--soak-seconds 600] [--soak-terms N] [--chunk-seconds 120]
# Exit 0 when the checker's verdict passes (or the scenario is report-only); 77 when the machine
# cannot run the scenario (nft partitions need root and nftables). The figures are printed and
# written to OUT/result.json (soak: OUT/soak.json, see soak.py).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
args=() store="" worker="" out="" soak=0 topology=""
while [ $# -gt 0 ]; do
  case $1 in
  --soak) soak=1; shift ;;
  --store) store=$2; args+=("$1" "$2"); shift 2 ;;
  --topology) topology=$2; args+=("$1" "$2"); shift 2 ;;
  --worker) worker=$2; shift 2 ;;
  --out) out=$2; shift 2 ;;
  *) args+=("$1"); shift ;;
  esac
done
[ -n "$store" ] || [ -n "$topology" ] || [ $soak = 1 ] || { echo "usage: $0 --store STORE [--seconds N] ..." >&2; exit 64; }
if [ -z "$worker" ]; then
  for b in "$REPO"/build*/tests/faults/fault_worker; do [ -x "$b" ] && worker=$b && break; done
fi
[ -x "$worker" ] || { echo "fault_worker not found: build the target fault_worker" >&2; exit 64; }
if [ $soak = 1 ] && [ -n "$topology" ]; then  # the long form of --topology (topology.py --soak)
  exec /usr/bin/python3 "$HERE/topology.py" --soak --worker "$worker" \
    --out "${out:-/tmp/leader-faults/soak-$topology}" "${args[@]}"
fi
if [ $soak = 1 ]; then
  exec /usr/bin/python3 "$HERE/soak.py" --worker "$worker" --out "${out:-/tmp/leader-faults/soak}" \
    "${args[@]}"
fi
if [ -n "$topology" ]; then
  exec /usr/bin/python3 "$HERE/topology.py" --worker "$worker" --out "${out:-/tmp/leader-faults/$topology}" \
    "${args[@]}"
fi
out=${out:-/tmp/leader-faults/$store}
exec /usr/bin/python3 "$HERE/faults.py" --worker "$worker" --out "$out" "${args[@]}"
