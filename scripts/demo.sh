#!/usr/bin/env bash
# The main job: several replica processes contend each round for the same job; exactly one runs
# it, the others skip (exit 0, as cron expects). By default the store is a SQLite file in a
# temporary directory removed on exit, so the demo leaves nothing behind (nothing in /var/lib).
#   scripts/demo.sh [--store URI] [replicas=5] [rounds=3]
#     --store URI   any store instead, kept afterwards: e.g. sqlite:build/demo.db,
#                   sqlite:///var/lib/leader/leader.db (the CLI's per-host default), redis://HOST
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: $0 [--store URI] [replicas=5] [rounds=3]"
case "${1:-}" in -h | --help) echo "$usage"; exit 0 ;; esac
store=
if [ "${1:-}" = --store ]; then
  [ $# -ge 2 ] || { echo "$usage" >&2; exit 64; }
  store=$2
  shift 2
fi
REPLICAS=${1:-5} ROUNDS=${2:-3}
LEADER=${LEADER_BIN:-build/tools/leader/leader}
[ -x "$LEADER" ] || { echo "demo: $LEADER not built; run scripts/build.sh --cli first" >&2; exit 1; }
out=$(mktemp -d "${TMPDIR:-/tmp}/leader-demo.XXXXXX")
trap 'rm -rf "$out"' EXIT
where="$store"
if [ -z "$store" ]; then
  store="sqlite://$out/leader.db"
  where="$store (a temporary file, removed on exit; --store URI to choose)"
fi
export LEADER_STORE=$store
echo "demo: $REPLICAS replica processes per round, $ROUNDS rounds, lock 'nightly-report'"
echo "      store: $where"
tokens=()
for round in $(seq 1 "$ROUNDS"); do
  pids=()
  for r in $(seq 1 "$REPLICAS"); do
    "$LEADER" run --lock nightly-report --node-id "replica-$r" -- \
      sh -c 'echo "  $LEADER_NODE_ID runs the job (fencing token $LEADER_FENCING_TOKEN)"; sleep 1' \
      > "$out/$round-$r.out" 2> "$out/$round-$r.err" &
    pids+=($!)
  done
  failed=0
  for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
  echo "round $round:"
  cat "$out/$round"-*.out
  ran=$(cat "$out/$round"-*.out | wc -l)
  skipped=$((REPLICAS - ran - failed))  # a skip is silent and exits 0, as cron expects
  echo "  -> ran on $ran replica(s), $skipped skipped because another replica held the lock"
  [ "$failed" = 0 ] || { cat "$out/$round"-*.err >&2; echo "demo: $failed replica(s) failed" >&2; exit 1; }
  [ "$ran" = 1 ] || { echo "demo: expected exactly one runner in round $round" >&2; exit 1; }
  tokens+=("$(sed -n 's/.*(fencing token \([0-9]*\))$/\1/p' "$out/$round"-*.out)")
done
state=$("$LEADER" status --lock nightly-report 2>&1) || true
echo "after the last round, \`leader status --lock nightly-report\` says: $state"
echo "demo: what you saw: in each round $REPLICAS processes asked for the lock at once; one got it"
echo "      and ran the job, the other $((REPLICAS - 1)) exited 0 without running it (silently, as"
echo "      cron wants). The fencing token grew every round (${tokens[*]}): a resource that rejects"
echo "      smaller tokens rejects a stale runner. The lock is free because each runner released it."
