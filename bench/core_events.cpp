// The cost the event bus adds to an election: the blocking run_if_leader on the in-process memory
// store (one uncontended lock, wait_time 0) with 0, 1 and 4 event subscribers, and with a
// MemoryHistory sink attached. Each run_if_leader publishes two events (elected, released).
//
//   build/bench/bench_core_events --benchmark_min_time=1 --benchmark_repetitions=3

#include <benchmark/benchmark.h>

#include <atomic>
#include <vector>

#include "leader/leader.hpp"
#include "leader/stores/memory.hpp"

namespace {

using namespace std::chrono_literals;

void BM_RunIfLeader(benchmark::State& state) {
  auto ring = std::make_shared<leader::MemoryHistory>(1024);
  leader::ElectorHooks hooks;
  if (state.range(1) != 0) hooks.history = ring;
  leader::LeaderElector e(leader::make_memory_store(), {.wait_time = 0s, .lease_time = 30s}, hooks);
  std::atomic<std::uint64_t> seen{0};
  std::vector<leader::Subscription> subs;
  for (int i = 0; i < state.range(0); ++i)
    subs.push_back(e.events().subscribe([&](const leader::ElectionEvent&) { ++seen; }));
  for (auto _ : state) benchmark::DoNotOptimize(e.run_if_leader("bench", [] { return 1; }));
  std::uint64_t dropped = 0;
  for (auto& s : subs) {
    (void)s.wait_idle(10s);
    dropped += s.dropped();
  }
  state.counters["dropped"] = static_cast<double>(dropped);
}
BENCHMARK(BM_RunIfLeader)
    ->ArgNames({"subscribers", "history"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({4, 0})
    ->Args({0, 1});

}  // namespace

BENCHMARK_MAIN();
