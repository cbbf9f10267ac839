#!/usr/bin/env bash
# ctest driver of the cache-warmer example: five replicas, three partitions (group slots) on the
# shared Redis; every partition is warmed exactly once, the two surplus replicas find all busy.
#   test.sh <example_cache_warmer binary> <redis-uri>
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "$2" LEADER_TEST_REDIS_URI cache-warmer
for r in 1 2 3 4 5; do
  spawn "$r" "$bin" "$uri" "replica-$r" "$out/cache" --lock "$lock" --partitions 3 \
    --round-ms 8000 --warm-ms 300
done
wait_all
[ "$(count '^WARMED ')" = 3 ] || fail "expected three WARMED lines"
[ "$(count '^BUSY ')" = 2 ] || fail "expected two BUSY replicas"
for p in 0 1 2; do
  [ "$(count "^WARMED partition=$p ")" = 1 ] || fail "partition $p not warmed once"
  [ -s "$out/cache/partition-$p" ] || fail "partition $p missing in the cache"
done
echo "ok: partitions 0, 1, 2 warmed once each; two replicas busy"
cat "$out"/*.log | grep -E '^(WARMED|BUSY)' | sort
