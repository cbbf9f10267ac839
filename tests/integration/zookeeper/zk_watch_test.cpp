// observe_lock over ZooKeeper watches (LockWatcher) against the real test server, beyond the
// contract's watch cases (tests/contract/watch_test.cpp: order, release-to-callback p50 watched
// vs polled, a vanished holder, deadline, stop, a stale snapshot, a bad name): a holder's session
// expiry and a lease reaching its ttl wake a watch; several watchers of one lock share one armed
// watch; the watcher's own session expiry and a paused server end or re-arm it, never past the
// deadline (a read while the session moves may fail as inspect() would); a store destroyed with
// an armed watch is safe.

#include <gtest/gtest.h>

#include <cstdio>
#include <thread>

#include "clients/zookeeper/session.hpp"
#include "leader/detail/capabilities.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/leader.hpp"
#include "leader/lock_watching.hpp"
#include "zk_store.hpp"
#include "zk_test_util.hpp"

namespace leader::zktest {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::shared_ptr<LeaseStore> watch_store(const std::string& timeout = "2s") {
  return open(uri("session_timeout=" + timeout + "&prefix=/leader-watch"));
}

LeaseRequest request(const std::string& lock, Ms ttl = 10s, int slots = 0) {
  return {lock, new_owner_token(), "watch-node", ttl, slots};
}

zookeeper::Session& base_session(LeaseStore& store) {
  return dynamic_cast<zookeeper::ZooKeeperStore&>(detail::unchecked(store)).base_session_for_test();
}

Ms since(Clock::time_point start) { return std::chrono::duration_cast<Ms>(Clock::now() - start); }

TEST(ZooKeeperWatch, TheHoldersSessionExpiryWakesAWatch) {
  auto holder = watch_store("1s");
  auto observer = watch_store();
  LockWatcher* w = lock_watcher(*observer);
  ASSERT_NE(w, nullptr);
  const auto name = unique("holder-expiry");
  auto got = holder->try_acquire(request(name, 30s), soon());  // held far past the watch below
  ASSERT_TRUE(got);
  const LockState held = observer->inspect(name, soon());
  ASSERT_TRUE(held.held());
  std::jthread expire([&] {
    std::this_thread::sleep_for(300ms);
    base_session(*holder).expire_for_test(Deadline::after(10s));  // its node goes with it
  });
  const auto start = Clock::now();
  std::stop_source never;
  const LockState after = w->watch(name, held, Deadline::after(30s), never.get_token());
  EXPECT_FALSE(after.held()) << "the watch returned after " << since(start).count() << " ms";
  EXPECT_LT(since(start), 15s) << "the expiry did not wake the watch";
}

TEST(ZooKeeperWatch, ALeaseReachingItsTtlWakesAWatch) {
  auto s = watch_store("10s");
  LockWatcher* w = lock_watcher(*s);
  const auto name = unique("ttl");
  auto got = s->try_acquire(request(name, 1500ms), soon());  // not renewed: deleted at its ttl
  ASSERT_TRUE(got);
  const LockState held = s->inspect(name, soon());
  ASSERT_TRUE(held.held());
  const auto start = Clock::now();
  std::stop_source never;
  const LockState after = w->watch(name, held, Deadline::after(30s), never.get_token());
  EXPECT_FALSE(after.held());
  EXPECT_LT(since(start), 15s);
  std::printf("zookeeper: a 1.5 s lease's end woke the watch after %lld ms\n",
              static_cast<long long>(since(start).count()));
}

TEST(ZooKeeperWatch, SeveralWatchersOfOneLockAndAGroupSlotAreWoken) {
  auto s = watch_store();
  auto other = watch_store();
  LockWatcher* w = lock_watcher(*s);
  const auto name = unique("group");
  const LockState free = s->inspect(name, soon());
  std::vector<LockState> seen(4);
  {
    std::vector<std::jthread> watchers;
    for (auto& out : seen)
      watchers.emplace_back([&] {
        std::stop_source never;
        out = w->watch(name, free, Deadline::after(20s), never.get_token());
      });
    std::this_thread::sleep_for(300ms);  // all waiting, sharing one watch of the session
    auto got = other->try_acquire(request(name, 10s, 2), soon());
    ASSERT_TRUE(got);
  }
  for (const auto& out : seen) {
    ASSERT_EQ(out.holders.size(), 1u);
    EXPECT_EQ(out.holders[0].slot, 0);
  }
}

TEST(ZooKeeperWatch, TheWatchersOwnSessionExpiryReArmsOnTheNewSession) {
  auto s = watch_store("1s");
  auto holder = watch_store();
  LockWatcher* w = lock_watcher(*s);
  const auto name = unique("own-expiry");
  auto got = holder->try_acquire(request(name, 20s), soon());
  ASSERT_TRUE(got);
  const LockState held = s->inspect(name, soon());
  const std::uint64_t generation = base_session(*s).generation();
  std::jthread change([&] {
    std::this_thread::sleep_for(300ms);
    base_session(*s).expire_for_test(Deadline::after(10s));  // the watch's session
    std::this_thread::sleep_for(500ms);
    EXPECT_EQ(holder->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
  });
  const auto start = Clock::now();
  std::stop_source never;
  LockState after = held;
  int failed = 0;
  while (same_holders(after, held) && since(start) < 20s) {  // an expiry may return unchanged
    try {
      after = w->watch(name, held, Deadline::after(20s), never.get_token());
    } catch (const BackendError& e) {  // a read while the session moves to the expiring twin
      EXPECT_EQ(e.code(), ErrorCode::unavailable) << e.what();
      ++failed;
    }
  }
  EXPECT_LE(failed, 3);
  EXPECT_FALSE(after.held());
  EXPECT_GT(base_session(*s).generation(), generation) << "the watch did not get a new session";
  EXPECT_LT(since(start), 10s);
}

TEST(ZooKeeperWatch, APausedServerEndsTheWatchByItsDeadlineAndItWatchesAgainAfter) {
  auto s = watch_store("2s");
  auto holder = watch_store("10s");
  LockWatcher* w = lock_watcher(*s);
  const auto name = unique("pause");
  const LockState free = s->inspect(name, soon());
  std::stop_source never;
  {
    ServerPause pause;
    const auto start = Clock::now();
    try {  // the client declares the connection lost after 2/3 of its 2 s timeout
      const LockState during = w->watch(name, free, Deadline::after(2500ms), never.get_token());
      EXPECT_TRUE(same_holders(free, during));
    } catch (const BackendError& e) {
      EXPECT_TRUE(e.code() == ErrorCode::unavailable || e.code() == ErrorCode::deadline_exceeded)
          << e.what();
    }
    EXPECT_LT(since(start), 3500ms) << "the watch outlived its deadline while disconnected";
  }
  std::jthread take([&] {
    std::this_thread::sleep_for(500ms);
    auto got = holder->try_acquire(request(name), Deadline::after(15s));
    EXPECT_TRUE(got);
  });
  const auto start = Clock::now();
  LockState after = free;
  while (!after.held() && since(start) < 25s) {
    try {
      after = w->watch(name, free, Deadline::after(20s), never.get_token());
    } catch (const BackendError&) {  // still reconnecting
      std::this_thread::sleep_for(100ms);
    }
  }
  EXPECT_TRUE(after.held()) << "no watch after the pause";
}

// A watch left armed by a watch() that returned at its deadline outlives the store; the event
// that fires it later must not reach freed memory (checked by the ASan build).
TEST(ZooKeeperWatch, AStoreDestroyedWithAnArmedWatchIsSafe) {
  auto holder = watch_store();
  const auto name = unique("destroyed");
  {
    auto s = watch_store();
    const LockState free = s->inspect(name, soon());
    std::stop_source never;
    (void)lock_watcher(*s)->watch(name, free, Deadline::after(200ms), never.get_token());
  }
  auto got = holder->try_acquire(request(name), soon());
  ASSERT_TRUE(got);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(holder->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
}

}  // namespace
}  // namespace leader::zktest
