#!/bin/sh
# One replica with its own sidecar, for the judge (tests/integration/capi/capi_judge.cpp):
#   replica.sh STORE_URI LOCK TERMS HOLD_MS NODE LOG
# Starts `leader serve --store STORE_URI` on a free loopback port, runs the Java replica
# (leader.sidecar.Replica) against it, then stops the sidecar (SIGTERM: it releases what it holds).
# LEADER: the leader binary; JAVA_CLASSES: the compiled classes.
set -eu
err=$(mktemp)
"${LEADER:-leader}" serve --store "$1" --listen 127.0.0.1:0 --node-id "$5" 2> "$err" &
sidecar=$!
trap 'kill "$sidecar" 2> /dev/null || true; wait "$sidecar" 2> /dev/null || true; rm -f "$err"' EXIT
url=""
for _ in $(seq 100); do
  url=$(sed -n 's|.*serving \(http://[^ ]*\) .*|\1|p' "$err" | head -1)
  [ -n "$url" ] && break
  kill -0 "$sidecar" 2> /dev/null || { cat "$err" >&2; exit 2; }
  sleep 0.05
done
[ -n "$url" ] || { echo "replica.sh: the sidecar did not start" >&2; cat "$err" >&2; exit 2; }
java -cp "$JAVA_CLASSES" leader.sidecar.Replica "$url" "$2" "$3" "$4" "$5" "$6"
