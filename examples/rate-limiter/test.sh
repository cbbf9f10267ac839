#!/usr/bin/env bash
# ctest driver of the rate-limiter example: three replicas with two jobs each share a limit of
# two concurrent calls on the shared etcd. Every job runs, only on slots 0 and 1, and no call
# ever saw more than two running.
#   test.sh <example_rate_limiter binary> <etcd-uri>
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "$2" LEADER_TEST_ETCD_URI rate-limiter
for r in 1 2 3; do
  spawn "$r" "$bin" "$uri" "replica-$r" "$out/running" --lock "$lock" --limit 2 --jobs 2 \
    --call-ms 200
done
wait_all
[ "$(count '^CALL ')" = 6 ] || fail "expected six calls"
[ "$(count '^DONE .* jobs=2$')" = 3 ] || fail "expected three replicas done"
[ "$(count '^CALL .* slot=[01] ')" = 6 ] || fail "a call ran outside slots 0 and 1"
[ "$(count ' active=([3-9]|[1-9][0-9])$')" = 0 ] || fail "more than two calls at once"
echo "ok: 6 calls, at most 2 at once ($(count ' active=2$') calls ran next to another)"
cat "$out"/*.log | grep -E '^CALL' | sort
