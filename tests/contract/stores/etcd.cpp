// The contract suite against a real etcd 3.4 (scripts/test-servers.sh start etcd). URI from
// LEADER_TEST_ETCD_URI. An outage is SIGSTOP of the etcd process (PID read from
// /tmp/le-test/pids/etcd.pid, or LEADER_TEST_ETCD_PIDFILE): connections are accepted by the
// kernel but never answered, and leases cannot be kept alive.

#include "server_outage.hpp"

namespace {

leader::contract::Backend make_etcd_backend() {
  auto b = leader::contract::shared_server_backend("etcd", "LEADER_TEST_ETCD_URI",
                                                   "etcd://127.0.0.1:12379?prefix=/leader-contract",
                                                   "LEADER_TEST_ETCD_PIDFILE", "etcd");
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(Etcd, make_etcd_backend);
