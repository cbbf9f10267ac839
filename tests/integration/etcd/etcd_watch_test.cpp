// observe_lock over etcd's Watch (LockWatcher) against the real server, beyond the contract's
// watch cases (tests/contract/watch_test.cpp: order, release-to-callback p50 watched vs polled,
// a vanished holder, deadline, stop): a lease that simply times out deletes its key, an event
// the watch reports at once, not at the safety net's re-read.

#include <gtest/gtest.h>

#include <thread>

#include "etcd/etcd_store.hpp"
#include "etcd_test_util.hpp"
#include "leader/lock_watching.hpp"
#include "seen_changes.hpp"

namespace leader::etcdtest {
namespace {

using namespace std::chrono_literals;

TEST(EtcdWatch, ALeaseThatTimesOutIsReported) {
  auto s = open(uri("/leader-watch"));
  ASSERT_NE(lock_watcher(*s), nullptr);
  const auto name = unique("expiry");
  test::SeenChanges seen;
  std::jthread observer([&](const std::stop_token& stop) {
    observe_lock(*s, name, [&](const LockState& st) { return seen.record(st); }, stop,
                 {.interval = 1s, .recheck = 60s});
  });
  ASSERT_TRUE(seen.wait_for(1, 20s));
  auto got = s->try_acquire({name, new_owner_token(), "watch-node", 2s, 0}, soon());
  ASSERT_TRUE(got);
  ASSERT_TRUE(seen.wait_for(2, 20s));
  ASSERT_TRUE(seen.wait_for(3, 15s)) << "the lease's expiry was never reported";  // not renewed
  EXPECT_EQ(seen.tokens(), (std::vector<std::uint64_t>{0, got.lease->fencing_token, 0}));
}

}  // namespace
}  // namespace leader::etcdtest
