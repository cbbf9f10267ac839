// The contract suite against the redis store: the shared redis-server of
// scripts/test-servers.sh (LEADER_TEST_REDIS_URI, default redis://127.0.0.1:16379). An outage is
// SIGSTOP of that server (PID from $LE_TEST_ROOT/pids/redis.pid): connections stay open, the
// kernel still accepts new ones, and nothing answers until SIGCONT.

#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "contract.hpp"

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

pid_t redis_pid() {
  std::string path = env_or("LE_TEST_ROOT", "/tmp/le-test") + "/pids/redis.pid";
  std::ifstream in(path);
  pid_t pid = 0;
  if (!(in >> pid) || pid <= 0)
    throw std::runtime_error("redis outage hook: no PID in " + path +
                             " (scripts/test-servers.sh start redis)");
  return pid;
}

leader::contract::Backend make_redis_backend() {
  leader::contract::Backend b;
  b.name = "redis";
  b.uri = env_or("LEADER_TEST_REDIS_URI", "redis://127.0.0.1:16379");
  b.open = [uri = b.uri] { return leader::open(uri); };
  b.outage_begin = [] { ::kill(redis_pid(), SIGSTOP); };
  b.outage_end = [] { ::kill(redis_pid(), SIGCONT); };
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(Redis, make_redis_backend);
