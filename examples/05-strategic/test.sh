#!/usr/bin/env bash
# ctest driver of examples/05-strategic (example.strategic): three candidates register with free
# CPU 0.20, 0.85 and 0.50; round 1 runs on aggregator-2 only (the best score), the others report
# that the strategy picks aggregator-2; after aggregator-2 leaves, round 2 runs on aggregator-3.
#   examples/05-strategic/test.sh <example_strategic binary>
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "" UNUSED strategic
"$bin" "$out/app-leader-strategic.db" >"$out/run.log" 2>&1 || fail "the program exited non-zero"
[ "$(count '^candidate aggregator-[1-3] free_cpu=')" = 3 ] || fail "not three candidates listed"
[ "$(count '^round 1: .* runs ')" = 1 ] || fail "round 1: not exactly one runner"
[ "$(count '^round 1: aggregator-2 runs the aggregation \(fencing token [0-9]+\)$')" = 1 ] ||
  fail "round 1 did not run on aggregator-2 (best score)"
[ "$(count '^round 1: aggregator-[13] not picked \(the strategy picks aggregator-2\)$')" = 2 ] ||
  fail "round 1: the others do not name aggregator-2 as the pick"
[ "$(count '^round 2: .* runs ')" = 1 ] || fail "round 2: not exactly one runner"
[ "$(count '^round 2: aggregator-3 runs the aggregation \(fencing token [0-9]+\)$')" = 1 ] ||
  fail "round 2 did not run on aggregator-3 (next best after aggregator-2 left)"
[ "$(count '^round 2: aggregator-1 not picked \(the strategy picks aggregator-3\)$')" = 1 ] ||
  fail "round 2: aggregator-1 does not name aggregator-3 as the pick"
cat "$out/run.log"
echo "ok: aggregator-2 (best score) ran round 1; after it left, aggregator-3 ran round 2"
