#!/usr/bin/env bash
# ctest driver of the migration-gate example: runs replica processes against PostgreSQL and checks
# their output.  test.sh <example_migration_gate binary> <postgres-uri>
#  1. three replicas start at once: exactly one migrates, all three start at version 2.
#  2. a migrator paused (SIGSTOP) past its lease is replaced by another replica with a higher
#     token; when it resumes, its final write is rejected and the schema is migrated once.
set -u
bin=$1
uri=${LEADER_TEST_POSTGRES_URI:-$2}
out=$(mktemp -d /tmp/leader-example-migration.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
  rm -rf "$out"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$out"/*.log; do echo "--- $f"; cat "$f"; done
  exit 1
}
count() { cat "$out"/*.log | grep -c "$1"; }
lock="migration-gate-$$-$RANDOM"

# Scenario 1: three replicas at once.
"$bin" "$uri" setup --reset >/dev/null || fail "reset"
for r in a b c; do
  "$bin" "$uri" "$r" --lock "$lock-1" --lease-ms 2000 --migrate-ms 300 >"$out/1-$r.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a replica exited non-zero"; done
pids=()
[ "$(count '^MIGRATED ')" = 1 ] || fail "scenario 1: expected exactly one MIGRATED"
[ "$(count '^STARTED .*version=2')" = 3 ] || fail "scenario 1: expected three STARTED"
[ "$(count '^REJECTED ')" = 0 ] || fail "scenario 1: unexpected REJECTED"
echo "scenario 1 ok: one migrator, three replicas started"
rm -f "$out"/*.log

# Scenario 2: the stale migrator.
"$bin" "$uri" setup --reset >/dev/null || fail "reset"
"$bin" "$uri" stale --lock "$lock-2" --lease-ms 1000 --migrate-ms 3000 >"$out/2-stale.log" 2>&1 &
stale=$!
pids+=("$stale")
for _ in $(seq 400); do grep -q '^CLAIMED' "$out/2-stale.log" && break; sleep 0.05; done
grep -q '^CLAIMED' "$out/2-stale.log" || fail "the first migrator never claimed"
kill -STOP "$stale"
# The lease is 1 s; the fresh replica retries until the store lets it take the lock (the store,
# not this script's clock, decides when the paused holder's lease is over).
"$bin" "$uri" fresh --lock "$lock-2" --lease-ms 1000 --migrate-ms 100 >"$out/2-fresh.log" 2>&1 ||
  fail "the fresh replica failed"
kill -CONT "$stale"
wait "$stale" || fail "the stale replica exited non-zero"
pids=()
grep -q '^MIGRATED replica=fresh' "$out/2-fresh.log" || fail "scenario 2: fresh did not migrate"
grep -q '^REJECTED replica=stale' "$out/2-stale.log" || fail "scenario 2: stale was not rejected"
grep -q '^MIGRATED' "$out/2-stale.log" && fail "scenario 2: the stale migrator committed"
grep -q '^STARTED replica=stale version=2' "$out/2-stale.log" || fail "scenario 2: stale did not start"
st=$(sed -n 's/^CLAIMED replica=stale token=\([0-9]*\)/\1/p' "$out/2-stale.log")
ft=$(sed -n 's/^CLAIMED replica=fresh token=\([0-9]*\)/\1/p' "$out/2-fresh.log")
[ -n "$st" ] && [ -n "$ft" ] && [ "$ft" -gt "$st" ] || fail "tokens not increasing: stale=$st fresh=$ft"
echo "scenario 2 ok: stale migrator (token $st) rejected after fresh (token $ft) migrated"
cat "$out"/2-*.log
