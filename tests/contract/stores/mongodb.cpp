// The contract suite against the MongoDB store, served by the mongomock stand-in
// (tests/doubles/mongodb: mongomock behind an OP_MSG shim; scripts/test-servers.sh start mongodb,
// 127.0.0.1:17017). URI from LEADER_TEST_MONGODB_URI. An outage is SIGSTOP of the shim process
// (PID from $LE_TEST_ROOT/pids/mongodb.pid, or LEADER_TEST_MONGODB_PIDFILE): connections are
// accepted by the kernel but never answered.

#include <string>

#include "server_outage.hpp"

namespace {

leader::contract::Backend make_mongodb_backend() {
  leader::contract::Backend b;
  b.name = "mongodb";
  b.uri = leader::contract::env_or("LEADER_TEST_MONGODB_URI",
                                   "mongodb://127.0.0.1:17017/leader_contract");
  b.open = [uri = b.uri] { return leader::open(uri); };
  leader::contract::set_sigstop_outage(
      b, leader::contract::server_pid_file("LEADER_TEST_MONGODB_PIDFILE", "mongodb"));
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(MongoDb, make_mongodb_backend);
