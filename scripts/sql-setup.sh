#!/usr/bin/env bash
# Server-side setup for the PostgreSQL and MariaDB stores' tests, run after
# `scripts/test-servers.sh start postgres mariadb`. Idempotent.
#   scripts/sql-setup.sh [start] [postgres] [mariadb]   (both by default; `stop` does nothing)
# Creates the database `leader_test` on each server (postgres 127.0.0.1:15432 user postgres,
# trust auth; MariaDB 127.0.0.1:13306 user root, no password). The stores create their tables
# themselves on first use (see docs/sql-schema.md).
set -euo pipefail
PG_PORT=${LE_PG_PORT:-15432}
MY_PORT=${LE_MARIADB_PORT:-13306}
case ${1:-} in
stop) exit 0 ;;   # nothing to undo: the databases live in the test servers' data directories
start) shift ;;
esac
for s in ${*:-postgres mariadb}; do case $s in
postgres)
  exists=$(psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -Atc \
    "SELECT 1 FROM pg_database WHERE datname = 'leader_test'")
  [ "$exists" = 1 ] || psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -qc \
    "CREATE DATABASE leader_test"
  echo "postgres: database leader_test ready"
  ;;
mariadb)
  mariadb --no-defaults -h 127.0.0.1 -P "$MY_PORT" -u root -e \
    "CREATE DATABASE IF NOT EXISTS leader_test CHARACTER SET utf8mb4"
  echo "mariadb: database leader_test ready"
  ;;
*) echo "unknown server: $s (expected postgres or mariadb)" >&2; exit 2 ;;
esac; done
