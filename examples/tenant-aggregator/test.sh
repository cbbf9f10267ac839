#!/usr/bin/env bash
# ctest driver of the tenant-aggregator example: three replicas, three tenants, two rounds on the
# shared PostgreSQL. No run of a tenant overlaps another of the same tenant (OVERLAP never
# printed), every tenant is aggregated, every attempt either ran or was skipped.
#   test.sh <example_tenant_aggregator binary> <postgres-uri>
set -u
bin=$1
uri=${LEADER_TEST_POSTGRES_URI:-$2}
out=$(mktemp -d /tmp/leader-example-tenant.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$out"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$out"/*.log; do echo "--- $f"; cat "$f"; done
  exit 1
}
job="aggregation-$$-$RANDOM"
"$bin" "$uri" setup --reset >/dev/null || fail "reset"
for r in r1 r2 r3; do
  "$bin" "$uri" "$r" --job "$job" --rounds 2 --work-ms 200 >"$out/$r.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a replica exited non-zero"; done
pids=()
all=$(cat "$out"/*.log)
grep -q '^OVERLAP' <<<"$all" && fail "two runs of one tenant overlapped"
for t in acme globex initech; do
  grep -q "^AGGREGATED tenant=$t " <<<"$all" || fail "tenant $t never aggregated"
done
[ "$(grep -cE '^(AGGREGATED|SKIPPED) ' <<<"$all")" = 18 ] || fail "expected 18 attempts"
echo "ok: no tenant overlapped; $(grep -c '^AGGREGATED' <<<"$all") runs, $(grep -c '^SKIPPED' <<<"$all") skips"
grep -E '^(AGGREGATED|SKIPPED)' <<<"$all" | sort
