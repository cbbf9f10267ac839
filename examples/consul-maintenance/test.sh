#!/usr/bin/env bash
# ctest driver of the consul-maintenance example on the shared Consul API double: three nodes
# fire at once, then a late one 1 s later (inside the maintenance window). Exactly one node
# maintains; the three others skip and name it as the holder.
#   test.sh <example_consul_maintenance binary> <consul-uri>
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "$2" LEADER_TEST_CONSUL_URI consul-maintenance
for r in n1 n2 n3; do
  spawn "$r" "$bin" "$uri" "$r" --lock "$lock" --window-ms 3000 --work-ms 300
done
sleep 1
spawn late "$bin" "$uri" late --lock "$lock" --window-ms 3000 --work-ms 300
wait_all
[ "$(count '^MAINTAINED ')" = 1 ] || fail "expected exactly one MAINTAINED"
holder=$(cat "$out"/*.log | sed -n 's/^MAINTAINED replica=\([^ ]*\) .*/\1/p')
[ "$(count "^SKIPPED replica=[^ ]* holder=$holder$")" = 3 ] || fail "the skips do not name $holder"
[ "$(count '^SKIPPED replica=late ' late)" = 1 ] || fail "the late node ran it again"
echo "ok: $holder maintained once; three nodes (one late) skipped"
cat "$out"/*.log | sort
