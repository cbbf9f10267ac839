#!/usr/bin/env bash
# ctest driver of the tenant-aggregator example: three replicas, three tenants, two rounds on the
# shared PostgreSQL. No run of a tenant overlaps another of the same tenant (OVERLAP never
# printed), every tenant is aggregated, every attempt either ran or was skipped.
#   test.sh <example_tenant_aggregator binary> <postgres-uri>
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "$2" LEADER_TEST_POSTGRES_URI tenant-aggregator
"$bin" "$uri" setup --reset >/dev/null || fail "reset"
for r in r1 r2 r3; do
  spawn "$r" "$bin" "$uri" "$r" --job "$lock" --rounds 2 --work-ms 200
done
wait_all
[ "$(count '^OVERLAP')" = 0 ] || fail "two runs of one tenant overlapped"
for t in acme globex initech; do
  [ "$(count "^AGGREGATED tenant=$t ")" -ge 1 ] || fail "tenant $t never aggregated"
done
[ "$(count '^(AGGREGATED|SKIPPED) ')" = 18 ] || fail "expected 18 attempts"
echo "ok: no tenant overlapped; $(count '^AGGREGATED') runs, $(count '^SKIPPED') skips"
cat "$out"/*.log | grep -E '^(AGGREGATED|SKIPPED)' | sort
