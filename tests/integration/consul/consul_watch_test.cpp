// observe_lock over Consul blocking queries (LockWatcher) against the double: each change is
// reported in order, an expired session is reported, a deadline or a stop ends a quiet watch.
// The release-to-callback p50 of the watch is printed (no timed assertion).

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "consul_double.hpp"
#include "leader/lock_watching.hpp"

namespace leader::consul::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The fencing token of each reported snapshot (0 = free) and when it came.
struct Seen {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::uint64_t> tokens;
  std::vector<Clock::time_point> at;

  bool record(const LockState& s) {
    std::lock_guard lock(mu);
    tokens.push_back(s.held() ? s.holders[0].fencing_token : 0);
    at.push_back(Clock::now());
    cv.notify_all();
    return true;
  }
  std::optional<Clock::time_point> wait_for(std::size_t n, Duration limit = 20s) {
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, limit, [&] { return tokens.size() >= n; })) return std::nullopt;
    return at[n - 1];
  }
};

TEST(ConsulWatch, EachChangeIsReportedInOrderWithoutWaitingForThePollInterval) {
  DoubleServer server;
  auto s = server.store();
  ASSERT_NE(lock_watcher(*s), nullptr);
  Seen seen;
  std::jthread observer([&](const std::stop_token& stop) {
    observe_lock(*s, "churn", [&](const LockState& st) { return seen.record(st); }, stop,
                 {.interval = 1s});
  });
  ASSERT_TRUE(seen.wait_for(1));
  std::vector<std::uint64_t> expected{0};
  std::vector<Ms> latencies;
  for (int i = 0; i < 10; ++i) {
    auto got = s->try_acquire(single("churn", Ms{5000}), soon());
    ASSERT_TRUE(got) << i;
    expected.push_back(got.lease->fencing_token);
    ASSERT_TRUE(seen.wait_for(expected.size())) << "acquire " << i << " never reported";
    const auto released = Clock::now();
    ASSERT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
    expected.push_back(0);
    auto reported = seen.wait_for(expected.size());
    ASSERT_TRUE(reported) << "release " << i << " never reported";
    latencies.push_back(std::chrono::duration_cast<Ms>(*reported - released));
  }
  observer.request_stop();
  observer.join();
  std::lock_guard l(seen.mu);
  EXPECT_EQ(seen.tokens, expected);
  std::sort(latencies.begin(), latencies.end());
  std::printf(
      "consul (double) release-to-callback latency, p50 of 10: watch %lld ms (poll "
      "interval 1s)\n",
      static_cast<long long>(latencies[latencies.size() / 2].count()));
}

TEST(ConsulWatch, AnExpiredSessionIsReported) {
  DoubleServer server;
  auto s = server.store();
  Seen seen;
  std::jthread observer([&](const std::stop_token& stop) {
    observe_lock(*s, "expiry", [&](const LockState& st) { return seen.record(st); }, stop,
                 {.interval = 1s, .recheck = 60s});
  });
  ASSERT_TRUE(seen.wait_for(1));
  auto got = s->try_acquire(single("expiry", Ms{1000}), soon());
  ASSERT_TRUE(got);
  ASSERT_TRUE(seen.wait_for(2));
  ASSERT_TRUE(seen.wait_for(3, 15s)) << "the session's expiry was never reported";
  std::lock_guard l(seen.mu);
  EXPECT_EQ(seen.tokens, (std::vector<std::uint64_t>{0, got.lease->fencing_token, 0}));
}

TEST(ConsulWatch, ADeadlineWithNoChangeReturnsTheUnchangedLockAndStopEndsTheWait) {
  DoubleServer server;
  auto s = server.store();
  LockWatcher* w = lock_watcher(*s);
  auto got = s->try_acquire(single("quiet", Ms{10000}), soon());
  ASSERT_TRUE(got);
  const LockState before = s->inspect("quiet", soon());
  std::stop_source never;
  EXPECT_TRUE(
      same_holders(before, w->watch("quiet", before, Deadline::after(500ms), never.get_token())));
  std::stop_source stop;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(300ms);
    stop.request_stop();
  });
  const auto start = Clock::now();
  EXPECT_TRUE(
      same_holders(before, w->watch("quiet", before, Deadline::after(60s), stop.get_token())));
  EXPECT_LT(Clock::now() - start, 30s) << "a stop request did not end the watch";
  EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
  EXPECT_FALSE(w->watch("quiet", before, Deadline::after(60s), never.get_token()).held());
}

}  // namespace
}  // namespace leader::consul::test
