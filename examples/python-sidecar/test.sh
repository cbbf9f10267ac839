#!/usr/bin/env bash
# ctest driver of the python-sidecar example: `leader serve` (SQLite in a scratch directory) on a
# free port; three Python replicas start the same 2.5 s job with a 2 s ttl at once: one runs it
# (its client renews the lease), two skip; a fourth run afterwards gets the released lock with a
# higher token.
#   test.sh <leader binary>
source "$(dirname "$0")/../test-lib.sh"
example_init "$1" "" LEADER_TEST_SIDECAR_STORE python-sidecar
[ -n "$uri" ] || uri="sqlite://$out/leader.db"
here=$(cd "$(dirname "$0")" && pwd)
for _ in $(seq 50); do
  port=$((20000 + RANDOM % 12000))
  (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
done
"$bin" serve --store "$uri" --listen "127.0.0.1:$port" --node-id sidecar-1 2>"$out/serve.err" &
pids+=($!)
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.05; done
url=http://127.0.0.1:$port
jobs=()
for r in py-1 py-2 py-3; do
  python3 "$here/job.py" "$url" "$r" --lock "$lock" --ttl 2s --steps 10 --step-s 0.25 \
    >"$out/$r.log" 2>&1 &
  jobs+=($!)
done
for j in "${jobs[@]}"; do wait "$j" || fail "a replica failed"; done
[ "$(count '^RAN .* steps=10$' py-1 py-2 py-3)" = 1 ] || fail "expected one replica to run the job"
[ "$(count '^SKIPPED ' py-1 py-2 py-3)" = 2 ] || fail "expected two skips"
python3 "$here/job.py" "$url" py-4 --lock "$lock" --ttl 2s --steps 1 >"$out/py-4.log" 2>&1 ||
  fail "py-4 failed"
t1=$(cat "$out"/py-[123].log | sed -n 's/^RAN .* token=\([0-9]*\) .*/\1/p')
t4=$(sed -n 's/^RAN .* token=\([0-9]*\) .*/\1/p' "$out/py-4.log")
[ -n "$t4" ] && [ "$t4" -gt "$t1" ] || fail "py-4 did not get the released lock after token $t1"
echo "ok: one Python replica ran the 2.5 s job on a 2 s ttl (renewed), two skipped; then py-4 (token $t4)"
cat "$out"/py-*.log | sort
