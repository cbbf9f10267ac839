// The ZooKeeper store's benchmarks (see bench/README.md, section zookeeper):
//  - uncontended run_if_leader with a no-op action through LeaderElector (create ephemeral
//    sequential + list children + delete: three round trips);
//  - the same acquire + release through the bare LeaseStore;
//  - the raw operation, measured in the same run on the same server: create an ephemeral
//    sequential node and delete it over one plain libzookeeper_mt handle (synchronous API);
//  - kazoo's Lock doing the same work (non-blocking acquire + release) and kazoo's raw
//    create+delete, run once per benchmark run through tests/integration/zookeeper/kazoo_peer.py.
// ops/s and p50/p99 per operation.
//
//   LEADER_BENCH_ZOOKEEPER_HOSTS=127.0.0.1:12181 build-zookeeper/bench/bench_zookeeper

#define THREADED 1
#include <benchmark/benchmark.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "leader/leader.hpp"
#include "support.hpp"

namespace {

using namespace std::chrono_literals;

std::string hosts() {
  return leader::bench::env_or("LEADER_BENCH_ZOOKEEPER_HOSTS", "127.0.0.1:12181");
}
std::string uri() { return "zk://" + hosts() + "?session_timeout=10s&root=/leader-bench"; }

[[maybe_unused]] const bool kStoreLoops = leader::bench::register_store_loops(uri, 10s);

// The raw operation: one ephemeral sequential create + delete on a plain handle.
void BM_RawCreateDelete(benchmark::State& state) {
  zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
  zhandle_t* zh = zookeeper_init(hosts().c_str(), nullptr, 10000, nullptr, nullptr, 0);
  for (int i = 0; i < 500 && zoo_state(zh) != ZOO_CONNECTED_STATE; ++i)
    std::this_thread::sleep_for(10ms);
  zoo_create(zh, "/leader-bench", "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, nullptr, 0);
  zoo_create(zh, "/leader-bench/raw", "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, nullptr, 0);
  char path[256];
  leader::bench::timed_loop(state, "ephemeral sequential create + delete", [&] {
    int rc = zoo_create(zh, "/leader-bench/raw/n-", "", 0, &ZOO_OPEN_ACL_UNSAFE,
                        ZOO_EPHEMERAL_SEQUENTIAL, path, sizeof path);
    if (rc == ZOK) rc = zoo_delete(zh, path, -1);
    return rc == ZOK;
  });
  zookeeper_close(zh);
}
BENCHMARK(BM_RawCreateDelete)->UseRealTime();

// kazoo, same server, same run: parses "name n=.. ops_per_s=.. p50_us=.. p99_us=.." lines.
void BM_KazooLockSideBySide(benchmark::State& state) {
  std::string here = __FILE__;  // <source>/bench/zookeeper.cpp
  const std::string source = here.substr(0, here.rfind("/bench/"));
  const std::string cmd = "/usr/bin/python3 " + source +
                          "/tests/integration/zookeeper/kazoo_peer.py bench " + hosts() +
                          " /leader-bench/kazoo 2000";
  for (auto _ : state) {
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) {
      state.SkipWithError("cannot run kazoo_peer.py");
      return;
    }
    char buf[512];
    while (fgets(buf, sizeof buf, p) != nullptr) {
      std::istringstream line(buf);
      std::string name, field;
      line >> name;
      const std::string prefix = name.find("lock") != std::string::npos ? "lock_" : "raw_";
      while (line >> field) {
        auto eq = field.find('=');
        if (eq != std::string::npos && field.substr(0, eq) != "n")
          state.counters[prefix + field.substr(0, eq)] = std::stod(field.substr(eq + 1));
      }
    }
    if (pclose(p) != 0) state.SkipWithError("kazoo_peer.py failed (python3-kazoo missing?)");
  }
}
BENCHMARK(BM_KazooLockSideBySide)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
