#!/usr/bin/env bash
# ctest driver of the migration-gate example: runs replica processes against PostgreSQL and checks
# their output.  test.sh <example_migration_gate binary> <postgres-uri>
#  1. three replicas start at once: exactly one migrates, all three start at version 2.
#  2. a migrator paused (SIGSTOP) past its lease is replaced by another replica with a higher
#     token; when it resumes, its final write is rejected and the schema is migrated once.
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "$2" LEADER_TEST_POSTGRES_URI migration-gate

# Scenario 1: three replicas at once.
"$bin" "$uri" setup --reset >/dev/null || fail "reset"
for r in a b c; do
  spawn "1-$r" "$bin" "$uri" "$r" --lock "$lock-1" --lease-ms 2000 --migrate-ms 300
done
wait_all
[ "$(count '^MIGRATED ')" = 1 ] || fail "scenario 1: expected exactly one MIGRATED"
[ "$(count '^STARTED .*version=2')" = 3 ] || fail "scenario 1: expected three STARTED"
[ "$(count '^REJECTED ')" = 0 ] || fail "scenario 1: unexpected REJECTED"
echo "scenario 1 ok: one migrator, three replicas started"
rm -f "$out"/*.log

# Scenario 2: the stale migrator.
"$bin" "$uri" setup --reset >/dev/null || fail "reset"
spawn 2-stale "$bin" "$uri" stale --lock "$lock-2" --lease-ms 1000 --migrate-ms 3000
stale=$!
wait_for 2-stale '^CLAIMED'
kill -STOP "$stale"
# The lease is 1 s; the fresh replica retries until the store lets it take the lock (the store,
# not this script's clock, decides when the paused holder's lease is over).
"$bin" "$uri" fresh --lock "$lock-2" --lease-ms 1000 --migrate-ms 100 >"$out/2-fresh.log" 2>&1 ||
  fail "the fresh replica failed"
kill -CONT "$stale"
wait_all
[ "$(count '^MIGRATED replica=fresh' 2-fresh)" = 1 ] || fail "scenario 2: fresh did not migrate"
[ "$(count '^REJECTED replica=stale' 2-stale)" = 1 ] || fail "scenario 2: stale was not rejected"
[ "$(count '^MIGRATED' 2-stale)" = 0 ] || fail "scenario 2: the stale migrator committed"
[ "$(count '^STARTED replica=stale version=2' 2-stale)" = 1 ] || fail "scenario 2: stale did not start"
st=$(sed -n 's/^CLAIMED replica=stale token=\([0-9]*\)/\1/p' "$out/2-stale.log")
ft=$(sed -n 's/^CLAIMED replica=fresh token=\([0-9]*\)/\1/p' "$out/2-fresh.log")
[ -n "$st" ] && [ -n "$ft" ] && [ "$ft" -gt "$st" ] || fail "tokens not increasing: stale=$st fresh=$ft"
echo "scenario 2 ok: stale migrator (token $st) rejected after fresh (token $ft) migrated"
cat "$out"/2-*.log
