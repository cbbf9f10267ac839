#!/usr/bin/env bash
# The main job: several replica processes contend each round for the same job on the embedded
# SQLite default store; exactly one runs it, the others skip (exit 0, as cron expects).
#   scripts/demo.sh [replicas=5] [rounds=3]
set -euo pipefail
cd "$(dirname "$0")/.."
REPLICAS=${1:-5} ROUNDS=${2:-3}
LEADER=${LEADER_BIN:-build/tools/leader/leader}
[ -x "$LEADER" ] || { echo "demo: $LEADER not built; run scripts/build.sh --cli first" >&2; exit 1; }
out=$(mktemp -d /tmp/leader-demo.XXXXXX)
trap 'rm -rf "$out"' EXIT
echo "demo: $REPLICAS replicas, $ROUNDS rounds, lock 'nightly-report', store: the SQLite default"
"$LEADER" run -v --lock demo-probe -- true 2>&1 | grep -i 'store' | head -1 || true
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
done
"$LEADER" status --lock nightly-report || true
echo "demo: exactly one replica ran the job in each of $ROUNDS rounds"
