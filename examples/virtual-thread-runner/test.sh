#!/usr/bin/env bash
# ctest driver of the virtual-thread-runner example: two replicas on one SQLite file each submit
# the same 60 jobs to a pool of 4 threads. Every job ran exactly once across the replicas, and no
# replica ran more than 4 actions at once (waiting for locks took no worker).
#   test.sh <example_virtual_thread_runner binary> [sqlite-uri]
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "" LEADER_TEST_SQLITE_URI virtual-thread-runner
[ -n "$uri" ] || uri="sqlite://$out/leader.db"
for r in r1 r2; do
  spawn "$r" "$bin" "$uri" "$r" --prefix "$lock" --jobs 60 --threads 4 --job-ms 20
done
wait_all
[ "$(count '^RAN ')" = 60 ] || fail "expected 60 runs in all, got $(count '^RAN ')"
[ "$(cat "$out"/*.log | sed -n 's/^RAN job=\([0-9]*\) .*/\1/p' | sort -u | wc -l)" = 60 ] ||
  fail "a job ran twice or not at all"
[ "$(count '^SUMMARY .* peak=[0-4]$')" = 2 ] || fail "more than 4 actions ran at once"
echo "ok: 60 jobs, each once; $(grep -h '^SUMMARY' "$out"/*.log | tr '\n' ' ')"
grep -h '^SUMMARY' "$out"/*.log
