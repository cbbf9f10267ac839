#!/usr/bin/env bash
# Re-captures the seed corpora from the shared test servers (scripts/start-all-servers.sh) into
# tests/fuzz/corpus/<harness>/. Every script writes only keys, tables and nodes named
# "fuzzcapture..." and removes them again. Run under the server lock:
#   flock /tmp/leader-servers.lock tests/fuzz/capture/capture-all.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
corpus=$here/../corpus
/usr/bin/python3 "$here/redis.py" "$corpus/fuzz_resp"
"$here/etcd.sh" "$corpus/fuzz_etcd_json"
"$here/dynamodb.sh" "$corpus/fuzz_dynamodb_json"
/usr/bin/python3 "$here/zookeeper.py" "$corpus/fuzz_zk_data"
"$here/sql.sh" "$corpus/fuzz_sql_rows"
