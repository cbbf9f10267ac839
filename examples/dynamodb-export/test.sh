#!/usr/bin/env bash
# ctest driver of the dynamodb-export example on the shared DynamoDB double (dynalite): an
# exporter of 12 items (checkpoint every 4) is paused (SIGSTOP) past its 1 s lease after its first
# checkpoint; a second replica takes over (the store decides when), resumes from the checkpoint
# and finishes. Resumed, the paused exporter stops (stop_token) or has its checkpoint rejected;
# accepted checkpoints never go back and their tokens never decrease.
#   test.sh <example_dynamodb_export binary> <dynamodb-uri>
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "$2" LEADER_TEST_DYNAMODB_URI dynamodb-export
cp=$out/checkpoint
spawn a "$bin" "$uri" a "$cp" --lock "$lock" --items 12 --every 4 --item-ms 100 --lease-ms 1000
a=$!
wait_for a '^CHECKPOINT replica=a .* at=4$'
kill -STOP "$a"
spawn b "$bin" "$uri" b "$cp" --lock "$lock" --items 12 --every 4 --item-ms 100 --lease-ms 1000
wait_for b '^EXPORTING replica=b ' 10
kill -CONT "$a"
wait_all
[ "$(count '^DONE replica=. exported=12$')" = 2 ] || fail "both should see the export complete"
[ "$(count '^EXPORTING replica=b .* from=(4|8)$' b)" -ge 1 ] || fail "b did not resume from a checkpoint"
[ "$(count '^CHECKPOINT replica=b .* at=12$' b)" = 1 ] || fail "b did not finish the export"
[ "$(count '^(STOPPED|REJECTED) replica=a ' a)" -ge 1 ] || fail "a was neither stopped nor rejected"
tb=$(sed -n 's/^CHECKPOINT replica=b token=\([0-9]*\) at=12$/\1/p' "$out/b.log")
read -r ct cpos <"$cp"
[ "$cpos" = 12 ] && [ "$ct" -ge "$tb" ] || fail "checkpoint '$ct $cpos': not at 12 under b's token $tb or later"
# No checkpoint of a's was accepted beyond the point b resumed from (a stale write would be).
amax=$(sed -n 's/^CHECKPOINT replica=a .* at=\([0-9]*\)$/\1/p' "$out/a.log" | sort -n | tail -1)
bfrom=$(sed -n 's/^EXPORTING replica=b .* from=\([0-9]*\)$/\1/p' "$out/b.log" | head -1)
[ "$amax" -le "$bfrom" ] || fail "a checkpointed $amax after b resumed from $bfrom"
echo "ok: a paused after its first checkpoint, b resumed and finished; the checkpoint ends at 12"
grep -hvE '^$' "$out"/a.log "$out"/b.log
