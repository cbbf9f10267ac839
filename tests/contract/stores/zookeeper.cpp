// The contract suite against a real ZooKeeper 3.8 server (scripts/test-servers.sh start
// zookeeper). URI from LEADER_TEST_ZOOKEEPER_URI. The session timeout is set to lease_unit so that
// a dead holder's ephemeral node goes after about one lease. An outage is SIGSTOP of the server's
// JVM (PID from /tmp/le-test/pids/zookeeper.pid, or LEADER_TEST_ZOOKEEPER_PIDFILE): connections
// stay open and nothing is answered.

#include "server_outage.hpp"

namespace {

leader::contract::Backend make_zookeeper_backend() {
  auto b = leader::contract::shared_server_backend(
      "zookeeper", "LEADER_TEST_ZOOKEEPER_URI",
      "zk://127.0.0.1:12181?session_timeout=2s&root=/leader-contract",
      "LEADER_TEST_ZOOKEEPER_PIDFILE", "zookeeper");
  b.lease_unit = std::chrono::milliseconds(2000);  // = the session timeout of the URI above
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(ZooKeeper, make_zookeeper_backend);
