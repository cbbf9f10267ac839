#!/usr/bin/env bash
# ctest driver of the prometheus-dashboard example: run.sh against the built `leader`; Prometheus
# must report the held lease (1) and its fencing token through the dashboard's own expressions.
#   test.sh <leader binary>      (exit 77 = skipped when prometheus is not installed)
set -u
command -v prometheus >/dev/null || { echo "prometheus not installed: skipped"; exit 77; }
out=$(LEADER=$1 bash "$(dirname "$0")/run.sh" 2>&1) || { echo "FAIL: run.sh failed"; echo "$out"; exit 1; }
echo "$out"
token=$(sed -n 's/.*(fencing token \([0-9]*\)).*/\1/p' <<<"$out")
grep -q "^panel 'Leases held (all replicas)': lock=nightly-report 1$" <<<"$out" ||
  { echo "FAIL: the held panel does not show 1"; exit 1; }
grep -q "^panel 'Fencing token per lock': lock=nightly-report $token$" <<<"$out" ||
  { echo "FAIL: the token panel does not show $token"; exit 1; }
echo "ok: Prometheus scraped the sidecar; the dashboard's panels show the lease and token $token"
