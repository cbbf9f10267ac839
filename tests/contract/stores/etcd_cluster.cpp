// The contract suite against a 3-member etcd 3.4 cluster on 127.0.0.1 (issue 15;
// scripts/cluster-servers.sh start etcd-cluster). URI from LEADER_TEST_ETCD_CLUSTER_URI: all three
// client endpoints. An outage is SIGSTOP of all three members (PIDs from
// $LE_TEST_ROOT/pids/etcd-cluster-{1,2,3}.pid): pausing one member is a failover, not an outage
// (tests/faults/topology.py injects those), so the contract's "server unreachable" is the whole
// cluster answering nothing, as with the single server.

#include "server_outage.hpp"

namespace {

leader::contract::Backend make_etcd_cluster_backend() {
  leader::contract::Backend b;
  b.name = "etcd";  // the store's name: the suite's etcd rules (whole-second ttls) apply
  b.uri = leader::contract::env_or(
      "LEADER_TEST_ETCD_CLUSTER_URI",
      "etcd://127.0.0.1:22379,127.0.0.1:22381,127.0.0.1:22383?prefix=/leader-contract");
  b.open = [uri = b.uri] { return leader::open(uri); };
  leader::contract::set_sigstop_outage(b, [] {
    std::vector<pid_t> pids;
    for (int i = 1; i <= 3; ++i) {
      pids.push_back(
          leader::contract::read_pid_file(leader::contract::env_or("LE_TEST_ROOT", "/tmp/le-test") +
                                          "/pids/etcd-cluster-" + std::to_string(i) + ".pid"));
    }
    return pids;
  });
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(EtcdCluster, make_etcd_cluster_backend);
