#!/usr/bin/env bash
# ctest driver of examples/03-group-slots (example.group-slots): five replicas on a group of three
# slots; exactly three warm a partition, each a different one (0, 1, 2), and two find all slots
# busy.
#   examples/03-group-slots/test.sh <example_group-slots binary>
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "" UNUSED group-slots
"$bin" "$out/app-leader-group.db" >"$out/run.log" 2>&1 || fail "the program exited non-zero"
[ "$(count '^replica-[0-4] warms partition [0-2]$')" = 3 ] || fail "not exactly three warmers"
parts=$(sed -n 's/^replica-[0-4] warms partition \([0-2]\)$/\1/p' "$out/run.log" | sort | tr -d '\n')
[ "$parts" = 012 ] || fail "partitions warmed: '$parts', expected 0, 1 and 2 once each"
[ "$(count '^replica-[0-4]: all slots busy$')" = 2 ] || fail "not exactly two replicas turned away"
cat "$out/run.log"
echo "ok: three replicas warmed partitions 0, 1 and 2; two found all slots busy"
