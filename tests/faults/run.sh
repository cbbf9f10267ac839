#!/usr/bin/env bash
# The fault suite for one store (docs/faults.md). Needs the test servers of
# scripts/test-servers.sh (and scripts/sql-setup.sh for postgres/mysql) and a built fault_worker.
#   tests/faults/run.sh --store redis [--seconds 300] [--scenario mixed|clock-mono|restart]
#                       [--workers 4] [--lease-ms 1500] [--seed N] [--no-server-faults]
#                       [--worker path/to/fault_worker] [--out DIR]
# Exit 0 when the checker's verdict passes (or the scenario is report-only); the figures are
# printed and written to OUT/result.json.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
args=() store="" worker="" out=""
while [ $# -gt 0 ]; do
  case $1 in
  --store) store=$2; args+=("$1" "$2"); shift 2 ;;
  --worker) worker=$2; shift 2 ;;
  --out) out=$2; shift 2 ;;
  *) args+=("$1"); shift ;;
  esac
done
[ -n "$store" ] || { echo "usage: $0 --store STORE [--seconds N] ..." >&2; exit 64; }
if [ -z "$worker" ]; then
  for b in "$REPO"/build*/tests/faults/fault_worker; do [ -x "$b" ] && worker=$b && break; done
fi
[ -x "$worker" ] || { echo "fault_worker not found: build the target fault_worker" >&2; exit 64; }
out=${out:-/tmp/leader-faults/$store}
exec /usr/bin/python3 "$HERE/faults.py" --worker "$worker" --out "$out" "${args[@]}"
