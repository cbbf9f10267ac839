#!/usr/bin/env bash
# Rows in the column layout of the stores' statements, as the real servers print them (psql -A
# and mariadb -B: tab-separated, \N for NULL), for the fuzz_sql_rows seed corpus.
set -u
out=$1
pg() { psql -h 127.0.0.1 -p ${LEADER_CAPTURE_PG_PORT:-15432} -U postgres -d ${LEADER_CAPTURE_PG_DB:-leader_test} -At -F $'\t' -P null='\N' -c "$1"; }
my() { mariadb --no-defaults -h 127.0.0.1 -P ${LEADER_CAPTURE_MY_PORT:-13306} -uroot ${LEADER_CAPTURE_MY_DB:-leader_test} -B -N -e "$1" |
  sed 's/^NULL\t/\\N\t/; s/\tNULL$/\t\\N/; s/\tNULL\t/\t\\N\t/g; s/^NULL$/\\N/'; }
save() { { printf '%s\n' "$2"; cat; } > "$out/$1"; echo "$1: $(head -c 160 "$out/$1" | tr '\n\t' '|,')"; }
pg "SELECT 'granted'::text, 0::int, 41::bigint" | save pg-acquire-single p0
pg "SELECT 'granted'::text, 0::int, 0::bigint WHERE false" | save pg-acquire-contended p0
pg "SELECT 'granted'::text, 1::int, 42::bigint" | save pg-acquire-group p1
pg "SELECT 'mismatch'::text, 3::int, NULL::bigint" | save pg-acquire-mismatch p1
pg "SELECT 0::int, 'host-a:4242'::text, md5('a')::text, 41::bigint, ceil(extract(epoch FROM interval '29.4567 s') * 1000)::bigint UNION ALL SELECT 1, 'host-b:17', md5('b'), 42, 1" | save pg-inspect p2
pg "SELECT 'node-a'::text, (extract(epoch FROM now()) * 1000000)::bigint, 3::bigint, 1::bigint, (extract(epoch FROM now() - interval '1 min') * 1000000)::bigint, '{\"zone\": \"eu-west-1\"}'::jsonb UNION ALL SELECT 'node-b', (extract(epoch FROM now()) * 1000000)::bigint, 0, 0, NULL, '{}'::jsonb" | save pg-candidates p3
my "SELECT 'granted', 1, 42" | save my-acquire-group m1
my "SELECT 'busy', NULL, NULL" | save my-acquire-contended m1
my "SELECT 'mismatch', 3, NULL" | save my-acquire-mismatch m1
my "SELECT 0, 'host-a:4242', md5('a'), 41, CEIL(TIMESTAMPDIFF(MICROSECOND, NOW(6), NOW(6) + INTERVAL 29456000 MICROSECOND) / 1000)" | save my-inspect m2
my "SELECT 'node-a', CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED), 3, 1, NULL, JSON_OBJECT('zone', 'eu-west-1')" | save my-candidates m3
sqlite3 -separator $'\t' -nullvalue '\N' :memory: "SELECT 'host-a:4242', '694d7a1c2b3e4f5a6b7c8d9e0f1a2b3c', 41, 0, 29456" | save sqlite-inspect s2
sqlite3 -separator $'\t' -nullvalue '\N' :memory: "SELECT 'node-a', CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), 3, 1, NULL, '{\"zone\":\"eu-west-1\"}'" | save sqlite-candidates s3
