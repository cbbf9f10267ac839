// The Consul store's benchmarks (bench/README.md, section consul), all against the Consul HTTP API
// DOUBLE (tests/doubles/consul, a Python process), never against a real Consul: the absolute
// figures measure the double as much as the store; only the ratios to the raw rows, measured in
// the same run over the same connection pool, say something about the store.
//  - uncontended run_if_leader with a no-op action through LeaderElector;
//  - the same acquire + release through the bare LeaseStore, a renew, a contended try_acquire;
//  - raw baselines over the store's own API client: what `api.Lock` does for one lock
//    (session create, ?acquire, ?release, session destroy), and a single KV GET.
//
//   LEADER_BENCH_CONSUL=127.0.0.1:18500 build/bench/bench_consul

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "consul/consul_store.hpp"
#include "leader/leader.hpp"
#include "support.hpp"

namespace {

using leader::bench::soon;
using namespace std::chrono_literals;

std::string uri() {
  return "consul://" + leader::bench::env_or("LEADER_BENCH_CONSUL", "127.0.0.1:18500") +
         "?prefix=leader-bench&session_ttl_min=100ms";
}

[[maybe_unused]] const bool kStoreLoops = leader::bench::register_store_loops(uri, 10s);

// Baseline: one lock cycle as the Go api.Lock does it (no fence, no read-back).
void BM_RawLockCycle(benchmark::State& state) {
  leader::consul::ConsulStore s(leader::consul::Config::from_uri(leader::Uri::parse(uri())));
  auto& api = s.api();
  const std::string key = "leader-bench/raw-" + std::to_string(::getpid()) + "/.lock";
  leader::bench::timed_loop(state, "raw acquire", [&] {
    const std::string sid = api.create_session({"bench", 10s, 0ms, false}, soon());
    auto r =
        api.txn(nlohmann::json::array({leader::consul::kv_op("lock", key, "", 0, 0, sid)}), soon());
    (void)api.release(key, sid, 0, "", soon());
    api.destroy_session(sid, soon());
    return r.committed;
  });
}
BENCHMARK(BM_RawLockCycle)->UseRealTime();

// Baseline: one KV read, the cheapest request (the double's and the transport's floor).
void BM_RawGet(benchmark::State& state) {
  leader::consul::ConsulStore s(leader::consul::Config::from_uri(leader::Uri::parse(uri())));
  leader::bench::timed_loop(state, "KV GET", [&] {
    (void)s.api().get("leader-bench/absent", soon());
    return true;
  });
}
BENCHMARK(BM_RawGet)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
