#!/usr/bin/env bash
# Real dynalite (DynamoDB JSON API) replies for the fuzz_dynamodb_json seed corpus.
set -u
out=$1; E=${LEADER_CAPTURE_DYNAMODB:-http://127.0.0.1:18000}; T=fuzzcapture_leases
post() {
  local d; d=$(date -u +%Y%m%dT%H%M%SZ)
  curl -s -D "$out/.headers" -X POST "$E/" -H 'Content-Type: application/x-amz-json-1.0' \
    -H "X-Amz-Target: DynamoDB_20120810.$1" -H "X-Amz-Date: $d" \
    -H "Authorization: AWS4-HMAC-SHA256 Credential=test/${d:0:8}/us-east-1/dynamodb/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=0000000000000000000000000000000000000000000000000000000000000000" \
    -d "$2"
}
save() { post "$2" "$3" > "$out/$1"; echo "$1: $(head -c 150 "$out/$1")"; }
save create-table CreateTable "{\"TableName\":\"$T\",\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"sk\",\"AttributeType\":\"S\"}],\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"sk\",\"KeyType\":\"RANGE\"}],\"BillingMode\":\"PAY_PER_REQUEST\"}"
sleep 1
save describe-table DescribeTable "{\"TableName\":\"$T\"}"
KEY='{"pk":{"S":"lock#job"},"sk":{"S":"lease"}}'
save update-acquire-updated-new UpdateItem "{\"TableName\":\"$T\",\"Key\":$KEY,\"UpdateExpression\":\"SET #o = :o, #h = :h, #v = :v, #d = :d, #f = if_not_exists(#f, :zero) + :one, #t = if_not_exists(#f, :zero) + :one\",\"ExpressionAttributeNames\":{\"#o\":\"o0\",\"#h\":\"h0\",\"#v\":\"v0\",\"#d\":\"d0\",\"#f\":\"fence\",\"#t\":\"t0\"},\"ExpressionAttributeValues\":{\":o\":{\"S\":\"694d7a1c2b3e4f5a6b7c8d9e0f1a2b3c\"},\":h\":{\"S\":\"host-a:4242\"},\":v\":{\"S\":\"3f2a9c1e7d5b4a60\"},\":d\":{\"N\":\"30000\"},\":one\":{\"N\":\"1\"},\":zero\":{\"N\":\"0\"}},\"ReturnValues\":\"UPDATED_NEW\"}"
post UpdateItem "{\"TableName\":\"$T\",\"Key\":$KEY,\"UpdateExpression\":\"SET t0 = fence, o1 = :o, h1 = :h, v1 = :v, d1 = :d, t1 = :t, sv1 = :v, s1 = :s\",\"ExpressionAttributeValues\":{\":o\":{\"S\":\"fedcba9876543210fedcba9876543210\"},\":h\":{\"S\":\"host-b:17\"},\":v\":{\"S\":\"81c0ffee00d15ea5\"},\":d\":{\"N\":\"15000\"},\":t\":{\"N\":\"2\"},\":s\":{\"N\":\"1764547200000\"}}}" > /dev/null
save getitem-lease-two-slots GetItem "{\"TableName\":\"$T\",\"Key\":$KEY,\"ConsistentRead\":true}"
grep -i '^date:' "$out/.headers" | sed 's/^[Dd]ate: //; s/\r$//' > "$out/http-date-header"
save getitem-missing GetItem "{\"TableName\":\"$T\",\"Key\":{\"pk\":{\"S\":\"lock#none\"},\"sk\":{\"S\":\"lease\"}},\"ConsistentRead\":true}"
save update-condition-failed UpdateItem "{\"TableName\":\"$T\",\"Key\":$KEY,\"UpdateExpression\":\"SET o0 = :o\",\"ConditionExpression\":\"attribute_not_exists(o0)\",\"ExpressionAttributeValues\":{\":o\":{\"S\":\"x\"}}}"
post PutItem "{\"TableName\":\"$T\",\"Item\":{\"pk\":{\"S\":\"candidates#g\"},\"sk\":{\"S\":\"node-a\"},\"node\":{\"S\":\"node-a\"},\"successes\":{\"N\":\"3\"},\"failures\":{\"N\":\"1\"},\"metadata\":{\"S\":\"{\\\"zone\\\":\\\"eu-west-1\\\"}\"},\"expires_ms\":{\"N\":\"4102444800000\"},\"registered_ms\":{\"N\":\"1764547200123\"},\"last_completion_ms\":{\"N\":\"1764547260456\"}}}" > /dev/null
post PutItem "{\"TableName\":\"$T\",\"Item\":{\"pk\":{\"S\":\"candidates#g\"},\"sk\":{\"S\":\"node-b\"},\"node\":{\"S\":\"node-b\"},\"successes\":{\"N\":\"0\"},\"failures\":{\"N\":\"0\"},\"metadata\":{\"S\":\"{}\"},\"expires_ms\":{\"N\":\"4102444800000\"},\"registered_ms\":{\"N\":\"1764547201000\"}}}" > /dev/null
save query-candidates Query "{\"TableName\":\"$T\",\"KeyConditionExpression\":\"pk = :pk\",\"ExpressionAttributeValues\":{\":pk\":{\"S\":\"candidates#g\"}},\"ConsistentRead\":true}"
save error-resource-not-found GetItem '{"TableName":"fuzzcapture_missing","Key":{"pk":{"S":"a"},"sk":{"S":"b"}}}'
save error-validation UpdateItem "{\"TableName\":\"$T\",\"Key\":$KEY,\"UpdateExpression\":\"SET\"}"
save error-unknown-operation Nonsense '{}'
save delete-table DeleteTable "{\"TableName\":\"$T\"}"
rm -f "$out/.headers"
