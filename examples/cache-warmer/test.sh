#!/usr/bin/env bash
# ctest driver of the cache-warmer example: five replicas, three partitions (group slots) on the
# shared Redis; every partition is warmed exactly once, the two surplus replicas find all busy.
#   test.sh <example_cache_warmer binary> <redis-uri>
set -u
bin=$1
uri=${LEADER_TEST_REDIS_URI:-$2}
out=$(mktemp -d /tmp/leader-example-cache.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$out"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$out"/*.log; do echo "--- $f"; cat "$f"; done
  exit 1
}
lock="cache-warmer-$$-$RANDOM"
for r in 1 2 3 4 5; do
  "$bin" "$uri" "replica-$r" "$out/cache" --lock "$lock" --partitions 3 --round-ms 8000 \
    --warm-ms 300 >"$out/$r.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a replica exited non-zero"; done
pids=()
all=$(cat "$out"/*.log)
[ "$(grep -c '^WARMED ' <<<"$all")" = 3 ] || fail "expected three WARMED lines"
[ "$(grep -c '^BUSY ' <<<"$all")" = 2 ] || fail "expected two BUSY replicas"
for p in 0 1 2; do
  [ "$(grep -c "^WARMED partition=$p " <<<"$all")" = 1 ] || fail "partition $p not warmed once"
  [ -s "$out/cache/partition-$p" ] || fail "partition $p missing in the cache"
done
echo "ok: partitions 0, 1, 2 warmed once each; two replicas busy"
grep -E '^(WARMED|BUSY)' <<<"$all" | sort
