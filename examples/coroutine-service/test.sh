#!/usr/bin/env bash
# ctest driver of the coroutine-service example on the shared Redis: two replicas of three
# coroutine workers each contend for one lease; exactly one worker leads. SIGTERM to both: the
# leader's job is cancelled and its lease released (RELEASED), the five waiting workers give up
# (GAVE-UP), both exit 0, and a probe finds the lock free at once although its lease was 10 s.
#   test.sh <example_coroutine_service binary> <redis-uri>
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "$2" LEADER_TEST_REDIS_URI coroutine-service
spawn r1 "$bin" "$uri" r1 --lock "$lock" --workers 3
spawn r2 "$bin" "$uri" r2 --lock "$lock" --workers 3
for _ in $(seq 400); do [ "$(count '^STEP .* n=3$')" -ge 1 ] && break; sleep 0.05; done
[ "$(count '^LEADING ')" = 1 ] || fail "expected exactly one leading worker"
# The waiting replica is stopped first: once the leader releases, another replica's waiter is
# woken by the store's notification and takes the lock within milliseconds, before its own
# SIGTERM would have cancelled it (a hand-over, not an overlap: the tokens increase).
lead=$(cat "$out"/*.log | sed -n 's/^LEADING worker=\(r[0-9]*\)\/.*/\1/p')
if [ "$lead" = r1 ]; then order=(1 0); else order=(0 1); fi
for i in "${order[@]}"; do
  kill -TERM "${pids[$i]}"
  wait "${pids[$i]}" || fail "a process exited non-zero"
done
pids=()
[ "$(count '^RELEASED ')" = 1 ] || fail "the leader was not cancelled and released"
[ "$(count '^GAVE-UP ')" = 5 ] || fail "expected five workers to give up"
leader=$(cat "$out"/*.log | sed -n 's/^LEADING worker=\([^ ]*\) .*/\1/p')
[ "$(count "^RELEASED worker=$leader$")" = 1 ] || fail "RELEASED is not the leader $leader"
"$bin" "$uri" probe --lock "$lock" --probe >"$out/probe.log" 2>&1 || fail "probe failed"
[ "$(count '^FREE ' probe)" = 1 ] || fail "the lease was not released on shutdown"
echo "ok: $leader led; SIGTERM released its lease (probe: free) and five waiters gave up"
cat "$out"/*.log | grep -vE '^STEP' | sort
