#!/usr/bin/env bash
# Real etcd v3 JSON gateway replies for the fuzz_etcd_json seed corpus.
set -u
out=$1; E=${LEADER_CAPTURE_ETCD:-http://127.0.0.1:12379}
b64() { printf '%s' "$1" | base64 -w0; }
post() { curl -s -X POST "$E$1" -H 'Content-Type: application/json' -d "$2"; }
save() { post "$2" "$3" > "$out/$1"; echo "$1: $(head -c 120 "$out/$1")"; }
P=fuzzcapture/job/
K=${P}694d7a1c2b3e4f5
LID=7594385629384756
post /v3/lease/revoke "{\"ID\":\"$LID\"}" > /dev/null
save lease-grant /v3/lease/grant "{\"TTL\":\"30\",\"ID\":\"$LID\"}"
save lease-grant-exists /v3/lease/grant "{\"TTL\":\"30\",\"ID\":\"$LID\"}"
VAL=$(b64 '{"node_id":"host-a:4242","owner":"694d7a1c2b3e4f5a6b7c8d9e0f1a2b3c"}')
PE=$(python3 -c "import base64;k=b'$P';print(base64.b64encode(k[:-1]+bytes([k[-1]+1])).decode())")
TXN="{\"compare\":[{\"key\":\"$(b64 $P)\",\"range_end\":\"$PE\",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"0\"}],\"success\":[{\"request_put\":{\"key\":\"$(b64 $K)\",\"value\":\"$VAL\",\"lease\":\"$LID\"}}],\"failure\":[]}"
save txn-acquire-succeeded /v3/kv/txn "$TXN"
save txn-acquire-contended /v3/kv/txn "$TXN"
save range-holder /v3/kv/range "{\"key\":\"$(b64 $P)\",\"range_end\":\"$PE\",\"sort_order\":\"ASCEND\",\"sort_target\":\"CREATE\"}"
save range-empty /v3/kv/range "{\"key\":\"$(b64 fuzzcapture/none)\"}"
save keepalive /v3/lease/keepalive "{\"ID\":\"$LID\"}"
save timetolive /v3/lease/timetolive "{\"ID\":\"$LID\"}"
save txn-delete-prev /v3/kv/txn "{\"compare\":[],\"success\":[{\"request_delete_range\":{\"key\":\"$(b64 $K)\",\"prev_kv\":true}}]}"
G=fuzzcapture/grp/
GV=$(b64 '{"node_id":"host-b:7","owner":"fedcba9876543210fedcba9876543210","slots":2}')
post /v3/lease/revoke "{\"ID\":\"$((LID+1))\"}" > /dev/null
post /v3/lease/grant "{\"TTL\":\"30\",\"ID\":\"$((LID+1))\"}" > /dev/null
post /v3/kv/put "{\"key\":\"$(b64 ${G}slot-0)\",\"value\":\"$GV\"}" > /dev/null
NEST="{\"compare\":[{\"key\":\"$(b64 ${G}slot-0)\",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"0\"}],\"success\":[{\"request_put\":{\"key\":\"$(b64 ${G}slot-0)\",\"value\":\"$GV\",\"lease\":\"$((LID+1))\"}}],\"failure\":[{\"request_txn\":{\"compare\":[{\"key\":\"$(b64 ${G}slot-1)\",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"0\"}],\"success\":[{\"request_put\":{\"key\":\"$(b64 ${G}slot-1)\",\"value\":\"$GV\",\"lease\":\"$((LID+1))\"}}],\"failure\":[]}}]}"
save txn-group-nested-slot1 /v3/kv/txn "$NEST"
save range-group "/v3/kv/range" "{\"key\":\"$(b64 $G)\",\"range_end\":\"$(b64 fuzzcapture/grq)\"}"
CV=$(b64 '{"node_id":"node-a","registered_at_ms":1764547200123,"successes":3,"failures":1,"metadata":{"zone":"eu-west-1"},"last_completion_ms":null,"ttl_ms":10000}')
post /v3/kv/put "{\"key\":\"$(b64 fuzzcapture-candidates/g/node-a)\",\"value\":\"$CV\"}" > /dev/null
save range-candidates /v3/kv/range "{\"key\":\"$(b64 fuzzcapture-candidates/g/node-a)\"}"
save txn-move-prev-kv /v3/kv/txn "{\"compare\":[],\"success\":[{\"request_put\":{\"key\":\"$(b64 ${G}slot-0)\",\"lease\":\"$((LID+1))\",\"ignore_value\":true,\"prev_kv\":true}}]}"
save error-lease-not-found /v3/lease/keepalive '{"ID":"1234"}'
save error-revoke-not-found /v3/lease/revoke '{"ID":"1234"}'
save error-bad-json /v3/kv/range '{"key":'
save auth-disabled /v3/auth/authenticate '{"name":"root","password":"x"}'
post /v3/lease/revoke "{\"ID\":\"$LID\"}" > /dev/null
post /v3/lease/revoke "{\"ID\":\"$((LID+1))\"}" > /dev/null
post /v3/kv/deleterange "{\"key\":\"$(b64 fuzzcapture)\",\"range_end\":\"$(b64 fuzzcapturf)\"}" > /dev/null
# a streamed watch reply line, as the gateway sends each event
timeout 2 curl -s -N -X POST "$E/v3/watch" -d "{\"create_request\":{\"key\":\"$(b64 fuzzcapture/w)\"}}" > "$out/watch-created-stream" &
sleep 0.5; post /v3/kv/put "{\"key\":\"$(b64 fuzzcapture/w)\",\"value\":\"$(b64 v)\"}" > /dev/null; wait
post /v3/kv/deleterange "{\"key\":\"$(b64 fuzzcapture/w)\"}" > /dev/null
echo "watch: $(head -c 200 "$out/watch-created-stream")"
