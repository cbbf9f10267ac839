// The elector's overhead over the raw store calls it makes, on the in-process memory store.
#include <benchmark/benchmark.h>

#include "leader/leader.hpp"
#include "leader/stores/memory.hpp"

namespace {

using namespace std::chrono_literals;

void BM_RawStoreAcquireRelease(benchmark::State& state) {
  auto store = leader::make_memory_store();
  leader::LeaseRequest req{"bench", leader::new_owner_token(), "node", 30s, 0};
  for (auto _ : state) {
    auto got = store->try_acquire(req, leader::Deadline::after(1s));
    (void)store->release(*got.lease, 0ms, leader::Deadline::after(1s));
  }
}
BENCHMARK(BM_RawStoreAcquireRelease);

void BM_RunIfLeader(benchmark::State& state) {
  auto store = leader::make_memory_store();
  leader::LeaderElector e(store,
                          {.wait_time = 0s, .lease_time = 30s, .auto_extend = state.range(0) != 0});
  for (auto _ : state) benchmark::DoNotOptimize(e.run_if_leader("bench", [] { return 1; }));
}
BENCHMARK(BM_RunIfLeader)->Arg(0)->Arg(1)->ArgName("auto_extend");

void BM_RunIfLeaderContended(benchmark::State& state) {
  static auto store = leader::make_memory_store();
  static leader::LeaderElector holder(store, {.wait_time = 0s, .lease_time = 30s});
  static auto held = holder.acquire("bench-held");
  leader::LeaderElector e(store, {.wait_time = 0s, .lease_time = 30s});
  for (auto _ : state) benchmark::DoNotOptimize(e.run_if_leader("bench-held", [] { return 1; }));
}
BENCHMARK(BM_RunIfLeaderContended);

}  // namespace

BENCHMARK_MAIN();
