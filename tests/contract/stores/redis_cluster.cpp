// The contract suite against a 3-primary Redis Cluster (issue 15; scripts/redis-cluster.sh start:
// ports 22700-22702, no replicas). URI from LEADER_TEST_REDIS_CLUSTER_URI: all three nodes. The
// store reads the slot map (CLUSTER SLOTS), sends each script to its keys' slot owner and follows
// MOVED/ASK. An outage is SIGSTOP of all three nodes (PIDs from
// $LE_TEST_ROOT/pids/redis-cluster-22700-n{0,1,2}.pid).

#include "server_outage.hpp"

namespace {

leader::contract::Backend make_redis_cluster_backend() {
  leader::contract::Backend b;
  b.name = "redis_cluster";
  b.uri =
      leader::contract::env_or("LEADER_TEST_REDIS_CLUSTER_URI",
                               "redis-cluster://127.0.0.1:22700,127.0.0.1:22701,127.0.0.1:22702");
  b.open = [uri = b.uri] { return leader::open(uri); };
  leader::contract::set_sigstop_outage(b, [] {
    std::vector<pid_t> pids;
    const std::string dir = leader::contract::env_or("LE_TEST_ROOT", "/tmp/le-test") + "/pids/";
    for (const char* n : {"n0", "n1", "n2"})
      pids.push_back(leader::contract::read_pid_file(dir + "redis-cluster-22700-" + n + ".pid"));
    return pids;
  });
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(RedisCluster, make_redis_cluster_backend);
