// The contract suite against a real ZooKeeper 3.8 server (scripts/test-servers.sh start
// zookeeper). URI from LEADER_TEST_ZOOKEEPER_URI. The session timeout is set to lease_unit so that
// a dead holder's ephemeral node goes after about one lease. An outage is SIGSTOP of the server's
// JVM (PID from /tmp/le-test/pids/zookeeper.pid, or LEADER_TEST_ZOOKEEPER_PIDFILE): connections
// stay open and nothing is answered.

#include <string>

#include "server_outage.hpp"

namespace {

std::string zookeeper_uri() {
  return leader::contract::env_or("LEADER_TEST_ZOOKEEPER_URI",
                                  "zk://127.0.0.1:12181?session_timeout=2s&root=/leader-contract");
}

leader::contract::Backend make_zookeeper_backend() {
  leader::contract::Backend b;
  b.name = "zookeeper";
  b.uri = zookeeper_uri();
  b.open = [] { return leader::open(zookeeper_uri()); };
  leader::contract::set_sigstop_outage(
      b, leader::contract::server_pid_file("LEADER_TEST_ZOOKEEPER_PIDFILE", "zookeeper"));
  b.lease_unit = std::chrono::milliseconds(2000);  // = the session timeout of the URI above
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(ZooKeeper, make_zookeeper_backend);
