// The contract suite against a 3-server ZooKeeper 3.8 ensemble on 127.0.0.1 (issue 15;
// scripts/cluster-servers.sh start zookeeper-ensemble). URI from
// LEADER_TEST_ZOOKEEPER_ENSEMBLE_URI: the connection string names all three servers, so the C
// client picks one and moves the session to another when its server goes. The session timeout is
// lease_unit, as on the single server. An outage is SIGSTOP of all three JVMs (PIDs from
// $LE_TEST_ROOT/pids/zookeeper-ensemble-{1,2,3}.pid): one paused server is a session move, not an
// outage (tests/faults/topology.py injects those).

#include "server_outage.hpp"

namespace {

leader::contract::Backend make_zookeeper_ensemble_backend() {
  leader::contract::Backend b;
  b.name = "zookeeper";  // the store's name, as the suite knows it
  b.uri = leader::contract::env_or(
      "LEADER_TEST_ZOOKEEPER_ENSEMBLE_URI",
      "zk://127.0.0.1:22181,127.0.0.1:22182,127.0.0.1:22183?session_timeout=2s&root=/"
      "leader-contract");
  b.open = [uri = b.uri] { return leader::open(uri); };
  b.lease_unit = std::chrono::milliseconds(2000);  // = the session timeout of the URI above
  leader::contract::set_sigstop_outage(b, [] {
    std::vector<pid_t> pids;
    for (int i = 1; i <= 3; ++i) {
      pids.push_back(leader::contract::read_pid_file(
          leader::contract::env_or("LE_TEST_ROOT", "/tmp/le-test") + "/pids/zookeeper-ensemble-" +
          std::to_string(i) + ".pid"));
    }
    return pids;
  });
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(ZooKeeperEnsemble, make_zookeeper_ensemble_backend);
