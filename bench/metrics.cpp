// What leader::metrics adds to an election: the blocking run_if_leader on the in-process memory
// store (one uncontended lock, wait_time 0, an action returning 1) without metrics (the baseline,
// measured in the same run), with the store instrumented (latency histograms on the caller's
// thread), with the elector's bus attached (the series fed by a subscription thread), and both.
// Also the cost of one serialize() of the series a few locks produce. bench/README.md.
#include "leader/metrics.hpp"

#include <benchmark/benchmark.h>

#include "leader/leader.hpp"
#include "leader/stores/memory.hpp"

namespace {

using namespace std::chrono_literals;

// range(0): 0 = no metrics, 1 = instrument(store), 2 = attach(bus), 3 = both.
void BM_RunIfLeader(benchmark::State& state) {
  const bool instrument = (state.range(0) & 1) != 0;
  const bool attach = (state.range(0) & 2) != 0;
  leader::metrics::Metrics metrics;
  std::shared_ptr<leader::LeaseStore> store = leader::make_memory_store();
  if (instrument) store = metrics.instrument(store);
  leader::LeaderElector e(store, {.wait_time = 0s, .lease_time = 30s});
  leader::Subscription sub;
  if (attach) sub = metrics.attach(e.events());
  for (auto _ : state)  // NOLINT(clang-analyzer-deadcode.DeadStores): the loop variable is unused
    benchmark::DoNotOptimize(e.run_if_leader("bench", [] { return 1; }));
  state.counters["dropped"] = static_cast<double>(sub.dropped());
}
BENCHMARK(BM_RunIfLeader)->Arg(0)->Arg(1)->Arg(2)->Arg(3)->ArgName("metrics")->UseRealTime();

void BM_Serialize(benchmark::State& state) {
  leader::metrics::Metrics metrics;
  auto store = metrics.instrument(leader::make_memory_store());
  leader::LeaderElector e(store, {.wait_time = 0s, .lease_time = 30s});
  auto sub = metrics.attach(e.events());
  for (int i = 0; i < state.range(0); ++i) {
    (void)e.run_if_leader("lock-" + std::to_string(i), [] {});
  }
  (void)sub.wait_idle(5s);
  std::size_t bytes = 0;
  for (auto _ : state)  // NOLINT(clang-analyzer-deadcode.DeadStores): the loop variable is unused
    bytes = metrics.serialize().size();
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_Serialize)->Arg(1)->Arg(100)->ArgName("locks");

}  // namespace

BENCHMARK_MAIN();
