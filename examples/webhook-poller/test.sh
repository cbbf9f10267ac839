#!/usr/bin/env bash
# ctest driver of the webhook-poller example on the shared MariaDB.
#   test.sh <example_webhook_poller binary> <mysql-uri>
#  1. two pollers, ten events: one polls at a time, the cursor reaches 10, nothing rejected.
#  2. a poller paused (SIGSTOP) mid-delivery past its lease: another replica takes over and moves
#     the cursor to 10; the resumed poller's cursor write (token lower) is rejected.
set -u
bin=$1
uri=${LEADER_TEST_MYSQL_URI:-$2}
out=$(mktemp -d /tmp/leader-example-webhook.XXXXXX)
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
lock="webhook-poller-$$-$RANDOM"

"$bin" "$uri" setup --reset 10 >/dev/null || fail "reset"
for r in a b; do
  "$bin" "$uri" "$r" --lock "$lock-1" --lease-ms 2000 --batch 5 --deliver-ms 100 \
    >"$out/1-$r.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a poller exited non-zero"; done
pids=()
all=$(cat "$out"/1-*.log)
[ "$(grep -c '^DONE .*cursor=10$' <<<"$all")" = 2 ] || fail "scenario 1: both should end at 10"
[ "$(grep -c '^ADVANCED ' <<<"$all")" = 2 ] || fail "scenario 1: expected two batches"
grep -q '^REJECTED' <<<"$all" && fail "scenario 1: unexpected REJECTED"
echo "scenario 1 ok: two pollers, cursor 0 -> 5 -> 10"

"$bin" "$uri" setup --reset 10 >/dev/null || fail "reset"
"$bin" "$uri" stale --lock "$lock-2" --lease-ms 1000 --batch 5 --deliver-ms 3000 \
  >"$out/2-stale.log" 2>&1 &
stale=$!
pids+=("$stale")
for _ in $(seq 400); do grep -q '^POLLED' "$out/2-stale.log" && break; sleep 0.05; done
grep -q '^POLLED' "$out/2-stale.log" || fail "the first poller never polled"
kill -STOP "$stale"
# The fresh poller retries until the store (not this script's clock) lets it take the lock.
"$bin" "$uri" fresh --lock "$lock-2" --lease-ms 1000 --batch 5 --deliver-ms 50 \
  >"$out/2-fresh.log" 2>&1 || fail "the fresh poller failed"
kill -CONT "$stale"
wait "$stale" || fail "the stale poller exited non-zero"
pids=()
grep -q '^DONE replica=fresh cursor=10$' "$out/2-fresh.log" || fail "scenario 2: fresh not at 10"
grep -q '^REJECTED replica=stale' "$out/2-stale.log" || fail "scenario 2: stale not rejected"
grep -q '^ADVANCED' "$out/2-stale.log" && fail "scenario 2: the stale poller moved the cursor"
grep -q '^DONE replica=stale cursor=10$' "$out/2-stale.log" || fail "scenario 2: cursor moved back"
echo "scenario 2 ok: the paused poller's cursor write was rejected; cursor stays at 10"
cat "$out"/2-*.log
