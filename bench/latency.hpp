#pragma once
// Per-operation latency bookkeeping shared by the store benchmarks: each iteration records its
// wall time in microseconds; report() adds p50/p99 counters and items processed.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

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

}  // namespace leader::bench
