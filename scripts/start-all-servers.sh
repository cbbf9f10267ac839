#!/usr/bin/env bash
# Starts every test server and runs the stores' extra setup scripts (databases, TLS, ACL users).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/test-servers.sh start redis postgres mariadb etcd zookeeper dynalite consul k8s mongodb
scripts/cluster-servers.sh start etcd-cluster zookeeper-ensemble  # issue 15: 3-member ensembles
for setup in scripts/sql-setup.sh scripts/redis-tls.sh scripts/redis-sentinel.sh scripts/redis-cluster.sh scripts/etcd-tls.sh \
    scripts/pg-standby.sh; do  # pg-standby: issue 15, PostgreSQL primary + streaming standby
  if [ -x "$setup" ]; then "$setup" start; fi
done
