// The contract suite against the redis store: the shared redis-server of
// scripts/test-servers.sh (LEADER_TEST_REDIS_URI, default redis://127.0.0.1:16379). An outage is
// SIGSTOP of that server (PID from $LE_TEST_ROOT/pids/redis.pid): connections stay open, the
// kernel still accepts new ones, and nothing answers until SIGCONT.

#include "server_outage.hpp"

namespace {

leader::contract::Backend make_redis_backend() {
  return leader::contract::shared_server_backend("redis", "LEADER_TEST_REDIS_URI",
                                                 "redis://127.0.0.1:16379",
                                                 "LEADER_TEST_REDIS_PIDFILE", "redis");
}

}  // namespace

LEADER_CONTRACT_BACKEND(Redis, make_redis_backend);
