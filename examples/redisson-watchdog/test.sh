#!/usr/bin/env bash
# ctest driver of the redisson-watchdog example.
#   test.sh <example_redisson_watchdog binary> <redis-uri>
#  1. shared Redis: a 3.5 s job under a 2 s lease with auto_extend finishes; a probe 2.5 s into
#     it (past the first lease) finds the lock held.
#  2. a PRIVATE redis-server (started and killed here, never the shared one) is killed (SIGKILL)
#     mid-job: the job aborts (exit 3) without finishing. Both scenarios run at once.
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "$2" LEADER_TEST_REDIS_URI redisson-watchdog

# A private Redis on a free port in 20000-31999.
for _ in $(seq 50); do
  port=$((20000 + RANDOM % 12000))
  (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
done
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >"$out/redis.out" 2>&1 &
redis=$!
pids+=("$redis")
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
redis-cli -p "$port" ping >/dev/null 2>&1 || fail "private redis-server did not start"

spawn 1-job "$bin" "$uri" job --lock "$lock" --lease-ms 2000 --steps 14 --step-ms 250
job1=$!
"$bin" "redis://127.0.0.1:$port" job --lock "$lock" --lease-ms 2000 --steps 60 --step-ms 100 \
  >"$out/2-job.log" 2>&1 &
job2=$!
wait_for 2-job '^STEP replica=job n=2$'
kill -KILL "$redis"
wait "$redis" 2>/dev/null
wait_for 1-job '^STEP replica=job n=10$'
"$bin" "$uri" probe --lock "$lock" --lease-ms 2000 --probe >"$out/1-probe.log" 2>&1 || fail "probe failed"
wait "$job2"
rc=$?
wait "$job1" || fail "scenario 1: the job failed"
pids=()
[ "$(count '^BUSY replica=probe$' 1-probe)" = 1 ] || fail "scenario 1: the probe got the lock mid-job"
[ "$(count '^DONE replica=job steps=14$' 1-job)" = 1 ] || fail "scenario 1: the job did not finish"
echo "scenario 1 ok: the job outlived its 2 s lease (probe at step 10 found it held) and finished"
[ "$rc" = 3 ] || fail "scenario 2: the job exited $rc, expected 3 (aborted)"
[ "$(count '^ABORTED replica=job ' 2-job)" = 1 ] || fail "scenario 2: no ABORTED line"
[ "$(count '^DONE' 2-job)" = 0 ] || fail "scenario 2: the job finished without its store"
echo "scenario 2 ok: $(grep '^ABORTED' "$out/2-job.log") once the private Redis was killed"
grep -hE '^(ACQUIRED|DONE|ABORTED|BUSY)' "$out"/1-job.log "$out"/1-probe.log "$out"/2-job.log
