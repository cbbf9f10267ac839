#!/bin/sh
# Demo: a shell program (curl) holds a lease through the `leader serve` sidecar, while a
# `leader run` replica of the same job is excluded; once the shell client releases the lease,
# the replica runs the job.
#
# Uses $LEADER_STORE (default: a SQLite file in a temporary directory); `leader` from $PATH or the
# binary named by $LEADER; the sidecar listens on 127.0.0.1:${PORT:-17790}.
# Run it:  sh examples/06-sidecar/demo.sh
set -eu
LEADER=${LEADER:-leader}
PORT=${PORT:-17790}
work=$(mktemp -d)
STORE=${LEADER_STORE:-sqlite://$work/leader.db}
API=http://127.0.0.1:$PORT

"$LEADER" serve --store "$STORE" --listen "127.0.0.1:$PORT" --node-id sidecar-1 \
  2> "$work/serve.log" &
serve_pid=$!
trap 'kill $serve_pid 2> /dev/null; wait $serve_pid 2> /dev/null; rm -rf "$work"' EXIT
i=0
until curl -fs "$API/healthz" > /dev/null; do
  i=$((i + 1)); [ $i -lt 100 ] || { cat "$work/serve.log" >&2; exit 1; }; sleep 0.1
done

# 1. The shell client takes the lease through the sidecar (the JSON carries lease_id and
#    fencing_token; no JSON tool needed for this demo).
reply=$(curl -fsS -X POST -d '{"ttl": "30s", "node_id": "shell-client"}' \
  "$API/v1/locks/nightly-report/acquire")
lease_id=$(printf '%s' "$reply" | sed 's/.*"lease_id":"\([0-9a-f]*\)".*/\1/')
token=$(printf '%s' "$reply" | sed 's/.*"fencing_token":\([0-9]*\).*/\1/')
echo "shell client holds nightly-report (fencing token $token)"

# 2. A replica running the same job with `leader run` is excluded (exit 0, command not run).
"$LEADER" run --store "$STORE" --lock nightly-report --node-id replica-2 -- \
  sh -c 'echo "replica-2 ran the job"'
echo "replica-2 was excluded while the shell client held the lease"

# 3. The client renews, then releases; now the replica runs the job.
curl -fsS -X POST -d "{\"lease_id\": \"$lease_id\"}" "$API/v1/locks/nightly-report/renew" > /dev/null
curl -fsS -X POST -d "{\"lease_id\": \"$lease_id\"}" "$API/v1/locks/nightly-report/release" > /dev/null
echo "shell client released nightly-report"
"$LEADER" run --store "$STORE" --lock nightly-report --node-id replica-2 -- \
  sh -c 'echo "replica-2 ran the job (fencing token $LEADER_FENCING_TOKEN)"'
