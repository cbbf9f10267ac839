// Redis behind Sentinel (issue 15; scripts/redis-sentinel.sh: primary 22600, replica 22601,
// Sentinels 22610-22612): what `?wait_replicas=1` (a WAIT after each acquire and renew) costs, as
// ratios against the same operations without WAIT, measured in the same run (bench/README.md):
//   - uncontended try_acquire + release, and renew of one held lease, through
//     redis-sentinel:// without WAIT, with wait_replicas=1, and through redis:// straight to the
//     primary (the baseline of Sentinel mode itself: discovery and ROLE happen once per
//     connection, so it should cost nothing per call).
//   build/bench/bench_redis_sentinel --benchmark_repetitions=5 --benchmark_report_aggregates_only

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "leader/leader.hpp"
#include "support.hpp"

namespace {

std::string sentinels() {
  const char* s = std::getenv("LEADER_BENCH_REDIS_SENTINELS");
  return s != nullptr ? s : "127.0.0.1:22610,127.0.0.1:22611,127.0.0.1:22612";
}

std::string uri(int variant) {
  switch (variant) {
    case 0:
      return "redis-sentinel://" + sentinels() + "/leader-test";
    case 1:
      return "redis-sentinel://" + sentinels() + "/leader-test?wait_replicas=1&wait_timeout=1s";
    default: {  // the primary's own address (scripts/redis-sentinel.sh primary)
      const char* p = std::getenv("LEADER_BENCH_REDIS_PRIMARY");
      return std::string("redis://") + (p != nullptr ? p : "127.0.0.1:22600");
    }
  }
}

const char* kLabels[] = {"sentinel", "sentinel+WAIT 1", "direct to the primary"};

void BM_AcquireRelease(benchmark::State& state) {
  state.SetLabel(kLabels[state.range(0)]);
  leader::bench::store_acquire_release_loop(state, uri(static_cast<int>(state.range(0))));
}

void BM_Renew(benchmark::State& state) {
  state.SetLabel(kLabels[state.range(0)]);
  leader::bench::store_renew_loop(state, uri(static_cast<int>(state.range(0))));
}

}  // namespace

BENCHMARK(BM_AcquireRelease)->Arg(0)->Arg(1)->Arg(2)->MinTime(2)->UseRealTime();
BENCHMARK(BM_Renew)->Arg(0)->Arg(1)->Arg(2)->MinTime(2)->UseRealTime();

BENCHMARK_MAIN();
