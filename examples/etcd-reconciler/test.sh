#!/usr/bin/env bash
# ctest driver of the etcd-reconciler example on the shared etcd: two replicas; the leader is
# paused (SIGSTOP) past its 2 s lease, the other takes over with a higher token (etcd decides when
# the paused lease is over); resumed, the old leader stops reconciling (reason=lost) without
# another pass under its old term; SIGTERM then shuts both down, the leader with reason=shutdown.
#   test.sh <example_etcd_reconciler binary> <etcd-uri>
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "$2" LEADER_TEST_ETCD_URI etcd-reconciler
spawn a "$bin" "$uri" a --lock "$lock" --lease-ms 2000
a=$!
wait_for a '^RECONCILE replica=a '
spawn b "$bin" "$uri" b --lock "$lock" --lease-ms 2000
b=$!
kill -STOP "$a"
wait_for b '^RECONCILE replica=b ' 10
kill -CONT "$a"
wait_for a '^STOPPED replica=a ' 10
kill -TERM "$a" "$b"
wait_all
ta=$(sed -n 's/^LEADING replica=a token=\([0-9]*\)$/\1/p' "$out/a.log" | head -1)
tb=$(sed -n 's/^LEADING replica=b token=\([0-9]*\)$/\1/p' "$out/b.log" | head -1)
[ -n "$ta" ] && [ -n "$tb" ] && [ "$tb" -gt "$ta" ] || fail "tokens not increasing: a=$ta b=$tb"
[ "$(count "^STOPPED replica=a token=$ta reason=lost$" a)" = 1 ] || fail "a did not stop on the lost lease"
# After its STOPPED line, a never reconciled under its old term again.
sed -n "/^STOPPED replica=a token=$ta/,\$p" "$out/a.log" | grep -q "^RECONCILE replica=a token=$ta " &&
  fail "a reconciled under its lost term"
[ "$(count "^STOPPED replica=b token=$tb reason=shutdown$" b)" = 1 ] || fail "b did not lead until shutdown"
echo "ok: a (token $ta) stopped on its lost lease; b (token $tb) took over"
grep -vE '^RECONCILE' "$out/a.log" "$out/b.log"
