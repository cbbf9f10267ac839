#!/bin/sh
# ExecutorCheck against a sidecar of its own on a SQLite file: check.sh DB_PATH
# LEADER: the leader binary; JAVA_CLASSES: the compiled classes.
set -eu
err=$(mktemp)
"${LEADER:-leader}" serve --store "sqlite://$1" --listen 127.0.0.1:0 2> "$err" &
sidecar=$!
trap 'kill -CONT "$sidecar" 2> /dev/null || true; kill "$sidecar" 2> /dev/null || true; wait "$sidecar" 2> /dev/null || true; rm -f "$err"' EXIT
url=""
for _ in $(seq 100); do
  url=$(sed -n 's|.*serving \(http://[^ ]*\) .*|\1|p' "$err" | head -1)
  [ -n "$url" ] && break
  sleep 0.05
done
[ -n "$url" ] || { echo "check.sh: the sidecar did not start" >&2; cat "$err" >&2; exit 2; }
java -cp "$JAVA_CLASSES" leader.sidecar.ExecutorCheck "$url" "$sidecar"
