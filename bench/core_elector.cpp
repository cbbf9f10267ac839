// The elector's overhead over the raw store calls it makes, on the in-process memory store.
#include <benchmark/benchmark.h>

#include <mutex>
#include <string>
#include <unordered_map>

#include "leader/leader.hpp"
#include "leader/stores/memory.hpp"

namespace {

using namespace std::chrono_literals;

/// The floor of any in-process elector, as a baseline measured in the same run: a mutex-guarded
/// map of held lock names with a fencing counter, no lease, no deadline, no events (what the
/// seed's local elector did).
class LocalMutexElector {
 public:
  template <class F>
  std::optional<int> run_if_leader(const std::string& lock, F&& action) {
    {
      std::lock_guard g(mu_);
      Entry& e = locks_[lock];
      if (e.held) return std::nullopt;
      e.held = true;
      ++e.token;
    }
    int v = action();
    std::lock_guard g(mu_);
    locks_[lock].held = false;
    return v;
  }

 private:
  struct Entry {
    bool held = false;
    std::uint64_t token = 0;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Entry> locks_;
};

void BM_LocalMutexElector(benchmark::State& state) {
  LocalMutexElector e;
  const std::string lock = "bench";
  for (auto _ : state) benchmark::DoNotOptimize(e.run_if_leader(lock, [] { return 1; }));
}
BENCHMARK(BM_LocalMutexElector);

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

// Uncontended with a wait (the default wait_time is 5 s): fair waiting takes a ticket in the
// process's wait queue for each call (ElectionOptions::fair); fair:0 is the baseline.
void BM_RunIfLeaderWaiting(benchmark::State& state) {
  auto store = leader::make_memory_store();
  leader::LeaderElector e(store, {.wait_time = 5s, .lease_time = 30s, .fair = state.range(0) != 0});
  for (auto _ : state) benchmark::DoNotOptimize(e.run_if_leader("bench", [] { return 1; }));
}
BENCHMARK(BM_RunIfLeaderWaiting)->Arg(0)->Arg(1)->ArgName("fair");

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
