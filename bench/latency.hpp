#pragma once
// Per-operation latency bookkeeping shared by the store benchmarks: each iteration records its
// wall time in microseconds; report() adds p50/p99 counters and items processed.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "leader/leader.hpp"

namespace leader::bench {

using Clock = std::chrono::steady_clock;

/// Sorts `us` and sets the p50_us / p99_us counters and items processed.
inline void report(benchmark::State& state, std::vector<double>& us) {
  if (us.empty()) return;
  std::sort(us.begin(), us.end());
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  state.SetItemsProcessed(static_cast<std::int64_t>(us.size()));
}

/// Microseconds since `t0`.
inline double micros_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

/// Uncontended `run_if_leader` with a no-op action on `uri`, one lock per process.
inline void run_if_leader_loop(benchmark::State& state, const std::string& uri,
                               Duration lease = std::chrono::seconds(30)) {
  using namespace std::chrono_literals;
  LeaderElector elector(open(uri), {.wait_time = 0ms, .lease_time = lease, .node_id = "bench"});
  const std::string lock = "bench-run-" + std::to_string(::getpid());
  std::vector<double> us;
  for (auto _ : state) {
    auto t0 = Clock::now();
    if (!elector.run_if_leader(lock, [] {})) throw std::runtime_error("uncontended skip");
    us.push_back(micros_since(t0));
  }
  report(state, us);
}

/// Uncontended `try_acquire` + `release` on the bare store of `uri`.
inline void store_acquire_release_loop(benchmark::State& state, const std::string& uri,
                                       Duration lease = std::chrono::seconds(30)) {
  using namespace std::chrono_literals;
  auto store = open(uri);
  const std::string lock = "bench-store-" + std::to_string(::getpid());
  std::vector<double> us;
  for (auto _ : state) {
    auto t0 = Clock::now();
    auto got =
        store->try_acquire({lock, new_owner_token(), "bench", lease, 0}, Deadline::after(5s));
    if (!got) throw std::runtime_error("uncontended acquire failed");
    (void)store->release(*got.lease, Duration{0}, Deadline::after(5s));
    us.push_back(micros_since(t0));
  }
  report(state, us);
}

/// `renew` of one held lease on the bare store of `uri`.
inline void store_renew_loop(benchmark::State& state, const std::string& uri) {
  using namespace std::chrono_literals;
  auto store = open(uri);
  const std::string lock = "bench-renew-" + std::to_string(::getpid());
  auto got = store->try_acquire({lock, new_owner_token(), "bench", 30s, 0}, Deadline::after(5s));
  if (!got) throw std::runtime_error("acquire failed");
  Lease lease = *got.lease;
  std::vector<double> us;
  for (auto _ : state) {
    auto t0 = Clock::now();
    if (store->renew(lease, 30s, Deadline::after(5s)).status != LeaseStatus::ok)
      throw std::runtime_error("renew lost");
    us.push_back(micros_since(t0));
  }
  (void)store->release(lease, Duration{0}, Deadline::after(5s));
  report(state, us);
}

}  // namespace leader::bench
