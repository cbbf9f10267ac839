#!/usr/bin/env bash
# ctest driver of examples/04-coroutines (example.coroutines): of eight coroutine workers exactly
# one settles (three batches under one fencing token), the other seven are skipped, and the job
# whose lock is held elsewhere is abandoned by its 50 ms timeout.
#   examples/04-coroutines/test.sh <example_coroutines binary>
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "" UNUSED coroutines
"$bin" >"$out/run.log" 2>&1 || fail "the program exited non-zero"
[ "$(count '^worker [0-7] settled 3 batches$')" = 1 ] || fail "not exactly one worker settled"
[ "$(count '^worker [0-7]: another worker holds the lease$')" = 7 ] || fail "not seven skips"
[ "$(count '^  batch [0-2] written with fencing token 1$')" = 3 ] || fail "not three fenced batches"
[ "$(count '^reindex abandoned after 50 ms: nothing acquired$')" = 1 ] || fail "reindex not abandoned"
cat "$out/run.log"
echo "ok: one worker of eight settled, seven skipped, the busy job abandoned by its timeout"
