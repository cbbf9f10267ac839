// The contract suite against Redis behind Sentinel (issue 15; scripts/redis-sentinel.sh start):
// primary 22600, replica 22601, Sentinels 22610-22612 monitoring 'leader-test'. URI from
// LEADER_TEST_REDIS_SENTINEL_URI. The store asks a Sentinel for the primary and checks ROLE. An
// outage is SIGSTOP of all five processes (PIDs from $LE_TEST_ROOT/pids/redis-sentinel-22600-*):
// pausing the primary alone is a failover, not an outage (tests/faults/topology_redis.py injects
// those); with the Sentinels paused too, they enter TILT mode on SIGCONT instead of failing over.

#include "server_outage.hpp"

namespace {

leader::contract::Backend make_redis_sentinel_backend() {
  leader::contract::Backend b;
  b.name = "redis_sentinel";
  b.uri = leader::contract::env_or(
      "LEADER_TEST_REDIS_SENTINEL_URI",
      "redis-sentinel://127.0.0.1:22610,127.0.0.1:22611,127.0.0.1:22612/leader-test");
  b.open = [uri = b.uri] { return leader::open(uri); };
  leader::contract::set_sigstop_outage(b, [] {
    std::vector<pid_t> pids;
    const std::string dir = leader::contract::env_or("LE_TEST_ROOT", "/tmp/le-test") + "/pids/";
    for (const char* n : {"s1", "s2", "s3", "r1", "r0"})
      pids.push_back(leader::contract::read_pid_file(dir + "redis-sentinel-22600-" + n + ".pid"));
    return pids;
  });
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(RedisSentinel, make_redis_sentinel_backend);
