#!/usr/bin/env bash
# ctest driver of the batch-scheduler example: three replicas run the same every-second cron task
# for 2.5 s on the shared Redis. Each firing (instant) ran on exactly one replica, and the shared
# JSON Lines history has one "completed" row per run, with the same fencing tokens.
#   test.sh <example_batch_scheduler binary> <redis-uri>
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "$2" LEADER_TEST_REDIS_URI batch-scheduler
for r in 1 2 3; do
  spawn "$r" "$bin" "$uri" "replica-$r" "$out/history.jsonl" --task "$lock" --run-ms 2500 \
    --work-ms 200
done
wait_all
runs=$(count '^RAN ')
[ "$runs" -ge 2 ] || fail "expected at least two firings in 2.5 s, got $runs"
dups=$(cat "$out"/*.log | sed -n 's/^RAN .* instant=\([0-9]*\) .*/\1/p' | sort | uniq -d)
[ -z "$dups" ] || fail "instants run twice: $dups"
[ "$(count '^STOPPED ')" = 3 ] || fail "a replica did not stop cleanly"
rows=$(grep -c "\"lock\":\"$lock\".*\"outcome\":\"completed\"" "$out/history.jsonl")
[ "$rows" = "$runs" ] || fail "history has $rows completed rows for $runs runs"
for t in $(cat "$out"/*.log | sed -n 's/^RAN .* token=\([0-9]*\)$/\1/p'); do
  grep -q "\"fencing_token\":$t," "$out/history.jsonl" || fail "token $t missing in the history"
done
echo "ok: $runs firings, each on one replica; $rows history rows"
cat "$out"/*.log | grep -E '^(RAN|STOPPED)' | sort
head -1 "$out/history.jsonl"
