#!/usr/bin/env bash
# ctest driver of examples/01-cron-once (example.cron-once): runs run.sh with the built `leader`
# on a SQLite file of its own and checks that exactly one of the three replicas ran the job, the
# other two exited 0 without running it, and the lock is free afterwards.
#   examples/01-cron-once/test.sh <leader binary>
set -euo pipefail
leader=$1
dir=$(mktemp -d /tmp/leader-example-cron-once.XXXXXX)
trap 'rm -rf "$dir"' EXIT
out=$(LEADER="$leader" LEADER_STORE="sqlite://$dir/leader.db" sh "$(dirname "$0")/run.sh" 2>&1)
echo "$out"
ran=$(grep -c 'runs the job (fencing token [0-9]*)' <<< "$out" || true)
[ "$ran" = 1 ] || { echo "FAIL: $ran replicas ran the job, expected exactly 1"; exit 1; }
rc=0
"$leader" status --store "sqlite://$dir/leader.db" --lock nightly-report > /dev/null 2>&1 || rc=$?
[ "$rc" = 3 ] || { echo "FAIL: leader status exited $rc, expected 3 (free) after every replica exited"; exit 1; }
echo "ok: one replica of three ran the job; the lock is free again"
