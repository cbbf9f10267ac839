#!/usr/bin/env bash
# ctest driver of the webhook-poller example on the shared MariaDB.
#   test.sh <example_webhook_poller binary> <mysql-uri>
#  1. two pollers, ten events: one polls at a time, the cursor reaches 10, nothing rejected.
#  2. a poller paused (SIGSTOP) mid-delivery past its lease: another replica takes over and moves
#     the cursor to 10; the resumed poller's cursor write (token lower) is rejected.
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "$2" LEADER_TEST_MYSQL_URI webhook-poller

"$bin" "$uri" setup --reset 10 >/dev/null || fail "reset"
for r in a b; do
  spawn "1-$r" "$bin" "$uri" "$r" --lock "$lock-1" --lease-ms 2000 --batch 5 --deliver-ms 100
done
wait_all
[ "$(count '^DONE .*cursor=10$')" = 2 ] || fail "scenario 1: both should end at 10"
[ "$(count '^ADVANCED ')" = 2 ] || fail "scenario 1: expected two batches"
[ "$(count '^REJECTED')" = 0 ] || fail "scenario 1: unexpected REJECTED"
echo "scenario 1 ok: two pollers, cursor 0 -> 5 -> 10"

"$bin" "$uri" setup --reset 10 >/dev/null || fail "reset"
spawn 2-stale "$bin" "$uri" stale --lock "$lock-2" --lease-ms 1000 --batch 5 --deliver-ms 3000
stale=$!
wait_for 2-stale '^POLLED'
kill -STOP "$stale"
# The fresh poller retries until the store (not this script's clock) lets it take the lock.
"$bin" "$uri" fresh --lock "$lock-2" --lease-ms 1000 --batch 5 --deliver-ms 50 \
  >"$out/2-fresh.log" 2>&1 || fail "the fresh poller failed"
kill -CONT "$stale"
wait_all
[ "$(count '^DONE replica=fresh cursor=10$' 2-fresh)" = 1 ] || fail "scenario 2: fresh not at 10"
[ "$(count '^REJECTED replica=stale' 2-stale)" -ge 1 ] || fail "scenario 2: stale not rejected"
[ "$(count '^ADVANCED' 2-stale)" = 0 ] || fail "scenario 2: the stale poller moved the cursor"
[ "$(count '^DONE replica=stale cursor=10$' 2-stale)" = 1 ] || fail "scenario 2: cursor moved back"
echo "scenario 2 ok: the paused poller's cursor write was rejected; cursor stays at 10"
cat "$out"/2-*.log
