// leader::metrics attached to a Scheduler through its elector's bus (memory store, real time:
// one fixed-rate task every 200 ms, the series read back after two firings ran).

#include <gtest/gtest.h>

#include <thread>

#include "leader/metrics.hpp"
#include "leader/scheduler.hpp"
#include "leader/stores/memory.hpp"

namespace leader::metrics {
namespace {

using namespace std::chrono_literals;

TEST(MetricsScheduler, TheSchedulersFiringsAreCountedThroughItsElectorsBus) {
  Metrics m;
  LeaderElector elector(m.instrument(make_memory_store()), scheduled_election_options());
  auto sub = m.attach(elector.events());  // the scheduler's copy of the elector shares this bus
  Scheduler scheduler(elector, {.max_clock_skew = 20ms, .latency_allowance = 20ms});
  std::atomic<int> ran{0};
  scheduler.schedule({.name = "nightly", .trigger = Trigger::fixed_rate(200ms)},
                     [&](LeaderContext&) { ++ran; });
  scheduler.start();
  for (int i = 0; i < 300 && ran.load() < 2; ++i) std::this_thread::sleep_for(10ms);
  scheduler.stop();
  ASSERT_GE(ran.load(), 2);
  ASSERT_TRUE(sub.wait_idle(5s));
  const std::string text = m.serialize();
  EXPECT_NE(text.find(R"(leader_elections_total{lock="nightly",result="elected"})"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          R"(leader_store_request_duration_seconds_count{operation="acquire",store="memory"})"),
      std::string::npos);
  EXPECT_NE(text.find(R"(leader_leases_ended_total{lock="nightly",outcome="completed"})"),
            std::string::npos);
}

}  // namespace
}  // namespace leader::metrics
