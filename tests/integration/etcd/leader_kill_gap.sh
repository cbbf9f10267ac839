#!/usr/bin/env bash
# Issue 37 defect 9 on a cluster: a private 3-member etcd (scripts/cluster-servers.sh, ports
# 25500 + 10 N), three fault_workers looping run_if_leader with a 10 s lease, the leader member
# killed once (kill -9, restarted 1.5 s later); prints the longest leaderless gap after the kill
# and how long the run ended without a leader. Manual, about 55 s:
#   tests/integration/etcd/leader_kill_gap.sh N   (WORKER=path/to/fault_worker to compare builds)
set -u
N=${1:-1}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=/tmp/leader-kill-gap-$N
rm -rf "$OUT"; mkdir -p "$OUT"
export LE_TEST_ROOT=$OUT/servers LE_ETCD_CLUSTER_BASE=$((25500 + 10 * N))
CS=$REPO/scripts/cluster-servers.sh
$CS start etcd-cluster >/dev/null || { echo "cluster did not start"; exit 1; }
read -r p1 p2 p3 <<< "$($CS ports etcd-cluster)"
eps=("127.0.0.1:$p1" "127.0.0.1:$p2" "127.0.0.1:$p3")
pids=()
for i in 0 1 2; do
  hosts="${eps[$i]},${eps[$(((i+1)%3))]},${eps[$(((i+2)%3))]}"
  ${WORKER:-$REPO/build/tests/faults/fault_worker} --uri "etcd://$hosts?prefix=/leader-d9" \
    --lock d9-$N \
    --dir "$OUT" --id $i --lease-ms 10000 --seconds 45 --max-steps 20 > "$OUT/w$i.log" 2>&1 &
  pids+=($!)
done
sleep 8
L=$($CS leader etcd-cluster)
t_kill=$(python3 -c 'import time; print(time.monotonic_ns())')
$CS member-stop etcd-cluster "$L" KILL; sleep 1.5; $CS member-start etcd-cluster "$L"
wait "${pids[@]}"
t_end=$(python3 -c 'import time; print(time.monotonic_ns())')
$CS stop etcd-cluster >/dev/null 2>&1
python3 - "$OUT/ledger" "$t_kill" "$t_end" <<'PY'
import sys
led, t_kill, t_end = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
terms = {}
for line in open(led):
    f = line.split()
    if f[0] == "A": terms.setdefault(f[1], {})["start"] = int(f[5])
    if f[0] == "E": terms.setdefault(f[1], {})["end"] = int(f[3])
ts = sorted((t["start"], t.get("end", t_end)) for t in terms.values() if "start" in t)
busy_until, gap, at = t_kill, 0, None
for s, e in ts:
    if e < t_kill: continue
    if s > busy_until and s - busy_until > gap: gap, at = s - busy_until, busy_until
    busy_until = max(busy_until, e)
tail = t_end - busy_until
print("terms %d (after the kill %d); longest leaderless gap after the kill %.1f s; "
      "no leader for the last %.1f s of the run" %
      (len(ts), sum(1 for s, e in ts if s > t_kill), gap / 1e9, tail / 1e9))
PY
grep -h "ERRORS" "$OUT"/w*.log | tr '\n' ' '; echo
