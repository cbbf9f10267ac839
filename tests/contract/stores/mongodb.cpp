// The contract suite against the MongoDB store, served by the mongomock stand-in
// (tests/doubles/mongodb: mongomock behind an OP_MSG shim; scripts/test-servers.sh start mongodb,
// 127.0.0.1:17017). URI from LEADER_TEST_MONGODB_URI. An outage is SIGSTOP of the shim process
// (PID from $LE_TEST_ROOT/pids/mongodb.pid, or LEADER_TEST_MONGODB_PIDFILE): connections are
// accepted by the kernel but never answered.

#include "server_outage.hpp"

namespace {

leader::contract::Backend make_mongodb_backend() {
  return leader::contract::shared_server_backend("mongodb", "LEADER_TEST_MONGODB_URI",
                                                 "mongodb://127.0.0.1:17017/leader_contract",
                                                 "LEADER_TEST_MONGODB_PIDFILE", "mongodb");
}

}  // namespace

LEADER_CONTRACT_BACKEND(MongoDb, make_mongodb_backend);
