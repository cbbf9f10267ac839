#!/bin/sh
# Demo: three "replicas" fire the same cron job at the same moment; exactly one runs it, the
# others exit 0 (so cron does not alarm; on a terminal they say who holds the lock, elsewhere -v).
#
# Uses the per-host SQLite default store (or $LEADER_STORE when set); `leader` from $PATH, or
# the binary named by $LEADER. Run it:  sh examples/01-cron-once/run.sh
set -eu
LEADER=${LEADER:-leader}

for replica in web-1 web-2 web-3; do
  "$LEADER" run --lock nightly-report --node-id "$replica" -- \
    sh -c 'echo "$LEADER_NODE_ID runs the job (fencing token $LEADER_FENCING_TOKEN)"; sleep 2' &
done
wait
"$LEADER" status --lock nightly-report || true  # exit 3: free again
