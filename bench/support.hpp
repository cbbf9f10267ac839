#pragma once
// What every store benchmark shares (bench/README.md): per-operation latency bookkeeping (each
// iteration records its wall time in microseconds; report() adds p50/p99 counters and items
// processed), the server address from the environment, and the loops measured on every store
// (run_if_leader, acquire + release and renew on the bare store, a contended attempt). A loop
// that cannot do its operation stops with SkipWithError naming what failed.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
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

/// $`name` when set and non-empty, else `fallback` (the shared test server's address).
inline std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

/// The deadline of one benchmarked operation.
inline Deadline soon() { return Deadline::after(std::chrono::seconds(5)); }

/// Times `operation()` once per iteration and reports the latencies. `operation` returns false
/// (or throws) when it failed: the benchmark then stops with SkipWithError(`what` + " failed").
template <class Operation>
void timed_loop(benchmark::State& state, const char* what, Operation&& operation) {
  std::vector<double> us;
  for (auto _ : state) {
    auto t0 = Clock::now();
    if (!operation()) {
      state.SkipWithError((std::string(what) + " failed").c_str());
      break;
    }
    us.push_back(micros_since(t0));
  }
  report(state, us);
}

/// A lock name of this process for the benchmark `what`.
inline std::string bench_lock(const std::string& what) {
  return "bench-" + what + "-" + std::to_string(::getpid());
}

/// Uncontended `run_if_leader` with a no-op action on `uri`, one lock per process.
inline void run_if_leader_loop(benchmark::State& state, const std::string& uri,
                               Duration lease = std::chrono::seconds(30)) {
  using namespace std::chrono_literals;
  LeaderElector elector(open(uri), {.wait_time = 0ms, .lease_time = lease, .node_id = "bench"});
  const std::string lock = bench_lock("run");
  timed_loop(state, "uncontended run_if_leader",
             [&] { return static_cast<bool>(elector.run_if_leader(lock, [] {})); });
}

/// Uncontended `try_acquire` + `release` on the bare store of `uri`.
inline void store_acquire_release_loop(benchmark::State& state, const std::string& uri,
                                       Duration lease = std::chrono::seconds(30)) {
  auto store = open(uri);
  const std::string lock = bench_lock("store");
  timed_loop(state, "uncontended acquire", [&] {
    auto got = store->try_acquire({lock, new_owner_token(), "bench", lease, 0}, soon());
    if (!got) return false;
    (void)store->release(*got.lease, Duration{0}, soon());
    return true;
  });
}

/// `renew` (to `lease`) of one held lease on the bare store of `uri`.
inline void store_renew_loop(benchmark::State& state, const std::string& uri,
                             Duration lease = std::chrono::seconds(30)) {
  auto store = open(uri);
  auto got =
      store->try_acquire({bench_lock("renew"), new_owner_token(), "bench", lease, 0}, soon());
  if (!got) {
    state.SkipWithError("acquire of the lease to renew failed");
    return;
  }
  const Lease held = *got.lease;
  timed_loop(state, "renew",
             [&] { return store->renew(held, lease, soon()).status == LeaseStatus::ok; });
  (void)store->release(held, Duration{0}, soon());
}

/// `try_acquire` of a lock another owner holds (for `holder_lease`) on the bare store of `uri`:
/// the Skipped path.
inline void store_contended_loop(benchmark::State& state, const std::string& uri,
                                 Duration lease = std::chrono::seconds(10),
                                 Duration holder_lease = std::chrono::seconds(60)) {
  auto store = open(uri);
  const std::string lock = bench_lock("contended");
  auto held = store->try_acquire({lock, new_owner_token(), "holder", holder_lease, 0}, soon());
  if (!held) {
    state.SkipWithError("acquire of the contended lock failed");
    return;
  }
  timed_loop(state, "contended attempt (it was granted: not contended)", [&] {
    return !store->try_acquire({lock, new_owner_token(), "bench", lease, 0}, soon());
  });
  (void)store->release(*held.lease, Duration{0}, soon());
}

/// Registers the loops every store measures, in this order: BM_RunIfLeaderUncontended,
/// BM_StoreAcquireRelease, BM_StoreRenew and BM_StoreContendedSkip (the other owner holding for
/// `holder_lease`), all with leases of `lease` on the store of `uri()` (called when a loop runs).
/// Meant for `const bool kStoreLoops = register_store_loops(...);` at namespace scope above the
/// store's own BENCHMARKs, so that they run in the order of the file.
inline bool register_store_loops(std::string (*uri)(), Duration lease,
                                 Duration holder_lease = std::chrono::seconds(60)) {
  benchmark::RegisterBenchmark("BM_RunIfLeaderUncontended", [=](benchmark::State& state) {
    run_if_leader_loop(state, uri(), lease);
  })->UseRealTime();
  benchmark::RegisterBenchmark("BM_StoreAcquireRelease", [=](benchmark::State& state) {
    store_acquire_release_loop(state, uri(), lease);
  })->UseRealTime();
  benchmark::RegisterBenchmark("BM_StoreRenew", [=](benchmark::State& state) {
    store_renew_loop(state, uri(), lease);
  })->UseRealTime();
  benchmark::RegisterBenchmark("BM_StoreContendedSkip", [=](benchmark::State& state) {
    store_contended_loop(state, uri(), lease, holder_lease);
  })->UseRealTime();
  return true;
}

}  // namespace leader::bench
