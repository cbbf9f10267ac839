// observe_lock over Consul blocking queries (LockWatcher) against the double, beyond the
// contract's watch cases (tests/contract/watch_test.cpp: order, release-to-callback p50 watched
// vs polled, a vanished holder, deadline, stop): a session invalidated by its TTL moves its key's
// ModifyIndex, which wakes the blocking query.

#include <gtest/gtest.h>

#include <thread>

#include "consul_double.hpp"
#include "leader/lock_watching.hpp"
#include "seen_changes.hpp"

namespace leader::consul::test {
namespace {

using namespace std::chrono_literals;

TEST(ConsulWatch, AnExpiredSessionIsReported) {
  DoubleServer server;
  auto s = server.store();
  ::leader::test::SeenChanges seen;
  std::jthread observer([&](const std::stop_token& stop) {
    observe_lock(*s, "expiry", [&](const LockState& st) { return seen.record(st); }, stop,
                 {.interval = 1s, .recheck = 60s});
  });
  ASSERT_TRUE(seen.wait_for(1, 20s));
  auto got = s->try_acquire(single("expiry", Ms{1000}), soon());
  ASSERT_TRUE(got);
  ASSERT_TRUE(seen.wait_for(2, 20s));
  ASSERT_TRUE(seen.wait_for(3, 15s)) << "the session's expiry was never reported";
  EXPECT_EQ(seen.tokens(), (std::vector<std::uint64_t>{0, got.lease->fencing_token, 0}));
}

}  // namespace
}  // namespace leader::consul::test
