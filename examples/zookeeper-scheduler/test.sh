#!/usr/bin/env bash
# ctest driver of the zookeeper-scheduler example on the shared ZooKeeper: replicas a (load 0.2),
# b (0.5) and c (0.8) take three jobs in rounds 400 ms apart; a leaves after job 2. Jobs 1 and 2
# run on a, job 3 on b, each exactly once.
#   test.sh <example_zookeeper_scheduler binary> <zk-uri>
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "$2" LEADER_TEST_ZOOKEEPER_URI zookeeper-scheduler
start=$(($(date +%s%3N) + 800))
for r in a:0.2 b:0.5 c:0.8; do
  spawn "${r%:*}" "$bin" "$uri" "${r%:*}" --load "${r#*:}" --start-ms "$start" --group "$lock" \
    --jobs 3 --round-ms 400 $([ "${r%:*}" = a ] && echo --leave-after 2)
done
wait_all
[ "$(count '^RAN ')" = 3 ] || fail "expected three jobs run"
[ "$(count '^RAN job=1 replica=a ')" = 1 ] || fail "job 1 not on a (least loaded)"
[ "$(count '^RAN job=2 replica=a ')" = 1 ] || fail "job 2 not on a (least loaded)"
[ "$(count '^RAN job=3 replica=b ')" = 1 ] || fail "job 3 not on b (least loaded once a left)"
[ "$(count '^LEFT replica=a$')" = 1 ] || fail "a did not leave"
echo "ok: jobs 1, 2 on a (load 0.2); a left; job 3 on b (load 0.5)"
cat "$out"/*.log | sort -t= -k2,2n
