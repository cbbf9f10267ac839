#!/usr/bin/env bash
# ctest driver of examples/02-embedded-sqlite (example.embedded-sqlite): runs the program twice on
# a SQLite file of its own; each run settles once, the second with a larger fencing token, and
# the lock is free after each.
#   examples/02-embedded-sqlite/test.sh <example_embedded-sqlite binary>
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "" UNUSED embedded-sqlite
for run in 1 2; do
  "$bin" "$out/app-leader.db" >"$out/run$run.log" 2>&1 || fail "run $run exited non-zero"
  [ "$(count '^settled 17 accounts$' "run$run")" = 1 ] || fail "run $run did not settle"
  [ "$(count '^lock is free$' "run$run")" = 1 ] || fail "run $run left the lock held"
done
t1=$(sed -n 's/^settling with fencing token \([0-9]*\)$/\1/p' "$out/run1.log")
t2=$(sed -n 's/^settling with fencing token \([0-9]*\)$/\1/p' "$out/run2.log")
[ -n "$t1" ] && [ -n "$t2" ] && [ "$t2" -gt "$t1" ] || fail "tokens not increasing: '$t1' then '$t2'"
cat "$out/run1.log" "$out/run2.log"
echo "ok: two runs settled, tokens $t1 then $t2, the lock free after each"
