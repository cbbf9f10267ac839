#!/usr/bin/env bash
# ctest driver of the mongodb-rollup example on the shared MongoDB double (mongomock behind the
# OP_MSG shim of tests/doubles/mongodb, not a real server): a leader of a 12-round rollup is paused
# (SIGSTOP) past its 1 s lease after its second round; a second replica takes over, claims the
# rollup document with its higher token and finishes it. Resumed, the paused leader's write is
# refused by MongoDB (the update's `token <= mine` filter) or its stop_token has fired first; the
# document ends at 12 rounds under the newer token, and no round of the old leader lands after
# the takeover.
#   test.sh <example_mongodb_rollup binary> <mongodb-uri>
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "$2" LEADER_TEST_MONGODB_URI mongodb-rollup
opts=(--lock "$lock" --rounds 12 --round-ms 150 --lease-ms 1000)
spawn a "$bin" "$uri" a "${opts[@]}"
a=$!
wait_for a '^ROLLUP replica=a .* round=2$'
kill -STOP "$a"
spawn b "$bin" "$uri" b "${opts[@]}"
wait_for b '^LEADING replica=b ' 10
kill -CONT "$a"
wait_all
ta=$(sed -n 's/^LEADING replica=a token=\([0-9]*\) at=0$/\1/p' "$out/a.log")
tb=$(sed -n 's/^LEADING replica=b token=\([0-9]*\) at=[0-9]*$/\1/p' "$out/b.log" | head -1)
[ -n "$ta" ] && [ -n "$tb" ] && [ "$tb" -gt "$ta" ] || fail "tokens not increasing: a=$ta b=$tb"
[ "$(count "^REJECTED replica=a token=$ta newer=[0-9]+$|^STOPPED replica=a token=$ta$" a)" -ge 1 ] ||
  fail "the resumed leader a was neither rejected by MongoDB nor stopped"
[ "$(count '^DONE replica=[ab] rounds=12 token=[0-9]+$')" = 2 ] || fail "both should see 12 rounds"
final=$(sed -n 's/^DONE replica=b rounds=12 token=\([0-9]*\)$/\1/p' "$out/b.log")
[ "$final" -ge "$tb" ] || fail "the rollup ends under token $final, older than b's $tb"
bfrom=$(sed -n 's/^LEADING replica=b .* at=\([0-9]*\)$/\1/p' "$out/b.log" | head -1)
amax=$(sed -n "s/^ROLLUP replica=a token=$ta round=\([0-9]*\)$/\1/p" "$out/a.log" | sort -n | tail -1)
[ "$amax" -le "$bfrom" ] || fail "a wrote round $amax after b took over at round $bfrom"
echo "ok: a (token $ta) paused after round 2; b (token $tb) took over at round $bfrom and finished;" \
  "a's late write was refused by MongoDB or a stopped first"
grep -hvE '^$' "$out"/a.log "$out"/b.log
