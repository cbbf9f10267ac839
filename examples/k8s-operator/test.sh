#!/usr/bin/env bash
# ctest driver of the k8s-operator example on the shared Kubernetes API double: two replicas; the
# Lease object read over the API names the leader in holderIdentity (client-go format) with its
# fencing token; SIGTERM to the leader releases the Lease and the standby takes over with a
# higher token long before leaseDurationSeconds (3 s) could have passed.
#   test.sh <example_k8s_operator binary> <k8s-uri>   (its namespace= names the Lease namespace)
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "$2" LEADER_TEST_K8S_URI k8s-operator
ns=$(sed -n 's/.*[?&]namespace=\([^&]*\).*/\1/p' <<<"$uri")
api="http://127.0.0.1:16443/apis/coordination.k8s.io/v1/namespaces/$ns/leases/$lock"
spawn a "$bin" "$uri" a --lock "$lock" --lease-ms 3000
a=$!
wait_for a '^RECONCILE replica=a '
spawn b "$bin" "$uri" b --lock "$lock" --lease-ms 3000
b=$!
lease=$(curl -fsS -m 5 "$api") || fail "cannot read the Lease object"
ta=$(sed -n 's/^LEADING replica=a token=\([0-9]*\)$/\1/p' "$out/a.log")
grep -q '"holderIdentity":"a_[0-9a-f]*"' <<<"$lease" || fail "holderIdentity is not a's: $lease"
grep -q "\"leader/fencing-token\":\"$ta\"" <<<"$lease" || fail "the Lease does not carry token $ta"
kill -TERM "$a"
wait_for b '^RECONCILE replica=b ' 10
kill -TERM "$b"
wait_all
tb=$(sed -n 's/^LEADING replica=b token=\([0-9]*\)$/\1/p' "$out/b.log")
[ "$tb" -gt "$ta" ] || fail "tokens not increasing: a=$ta b=$tb"
[ "$(count '^STOPPED replica=a reason=shutdown$' a)" = 1 ] || fail "a did not shut down cleanly"
released=$(curl -fsS -m 5 "$api") || fail "cannot read the Lease object"
grep -q '"holderIdentity":""' <<<"$released" || fail "the Lease was not released: $released"
echo "ok: a led (token $ta, Lease holderIdentity a_...), released on SIGTERM; b took over (token $tb)"
grep -hvE '^RECONCILE' "$out/a.log" "$out/b.log"
echo "$lease" | sed 's/"managedFields":\[[^]]*\],//'
