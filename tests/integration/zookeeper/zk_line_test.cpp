// Waiting in line (LeaseRequest::wait_in_line, issue 14 target 4): fair waiters of different
// processes keep their sequential node between attempts, so ZooKeeper's own order serves them
// first come, first served, and a waiter that stops waiting leaves no node behind. Each "process"
// here is a store object of its own (its own sessions, its own in-process wait queue): to the
// server and to the elector that is what another process is.

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "leader/leader.hpp"
#include "zk_raw.hpp"
#include "zk_test_util.hpp"

namespace leader::zktest {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPrefix = "/leader-line";

std::shared_ptr<LeaseStore> process_store() {
  return open(uri("session_timeout=4s&prefix=" + std::string(kPrefix)));
}

/// The lock recipe's nodes of `lock` on the server, as another client sees them.
std::vector<std::string> nodes_of(const std::string& lock) {
  RawClient raw;
  return raw.children(std::string(kPrefix) + "/" + lock);
}

/// Each test's holder: a process (store object) of its own that takes the lock first.
class ZooKeeperLine : public ::testing::Test {
 protected:
  std::shared_ptr<LeaseStore> holder_store_ = process_store();
  LeaderElector holder_{holder_store_, {.wait_time = 0s, .lease_time = 10s}};
};

TEST_F(ZooKeeperLine, WaitersOfSeparateProcessesAreServedInArrivalOrder) {
  const std::string lock = unique("line-order");
  auto held = holder_.acquire(lock);
  ASSERT_TRUE(held);
  const std::uint64_t first_token = held.guard->info().fencing_token;

  constexpr int kWaiters = 4;
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::uint64_t> tokens;
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      auto store = process_store();
      LeaderElector e(store, {.wait_time = 30s, .lease_time = 10s});
      const bool ran = e.run_if_leader(lock, [&](LeaderContext& ctx) {
        {
          std::lock_guard g(mu);
          order.push_back(i);
          tokens.push_back(ctx.fencing_token());
        }
        std::this_thread::sleep_for(100ms);
      });
      EXPECT_TRUE(ran) << "waiter " << i;
    });
    // Waiter i's first attempt (and so its node) comes before waiter i + 1's.
    ASSERT_TRUE(eventually([&] { return nodes_of(lock).size() == static_cast<std::size_t>(i + 2); },
                           Ms{10000}))
        << "waiter " << i << " has no node in line: " << nodes_of(lock).size() << " nodes";
  }
  held.guard->release();
  for (auto& t : waiters) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3})) << "served out of arrival order";
  std::uint64_t last = first_token;
  for (std::uint64_t t : tokens) {
    EXPECT_GT(t, last) << "fencing tokens must grow in the order of the holders";
    last = t;
  }
  EXPECT_TRUE(eventually([&] { return nodes_of(lock).empty(); }, Ms{5000}))
      << nodes_of(lock).size() << " nodes left";
}

// Threads of one process share its in-process queue: only its head may stand in the store's
// line. (When every first attempt kept its node, the places of threads queued behind the head
// stood ahead of it in the store's line: the head waited for them, they for the head, until
// their waits ran out.)
TEST_F(ZooKeeperLine, WaitersOfOneProcessAndOfOthersAllGetTheirTurn) {
  auto shared = holder_store_;  // the holder's process
  std::vector<std::shared_ptr<LeaseStore>> others{process_store(), process_store()};
  for (int round = 0; round < 3; ++round) {
    const std::string lock = unique("line-mixed");
    auto held = holder_.acquire(lock);
    ASSERT_TRUE(held);
    std::atomic<int> ran{0};
    std::atomic<int> inside{0};
    std::latch start(7);  // first attempts at once: before any of them holds a ticket
    std::vector<std::thread> waiters;
    for (int i = 0; i < 7; ++i) {
      waiters.emplace_back([&, i] {
        // Five threads of one process, two of others.
        LeaderElector e(i < 5 ? shared : others[static_cast<std::size_t>(i - 5)],
                        {.wait_time = 8s, .lease_time = 10s});
        start.arrive_and_wait();
        const bool got = e.run_if_leader(lock, [&] {
          EXPECT_EQ(inside.fetch_add(1), 0) << "two holders at once";
          std::this_thread::sleep_for(20ms);
          inside.fetch_sub(1);
        });
        EXPECT_TRUE(got) << "round " << round << ": waiter " << i << " skipped";
        if (got) ran.fetch_add(1);
      });
    }
    std::this_thread::sleep_for(300ms);  // every waiter has asked once and waits
    held.guard->release();
    for (auto& t : waiters) t.join();
    EXPECT_EQ(ran.load(), 7) << "round " << round;
    EXPECT_TRUE(eventually([&] { return nodes_of(lock).empty(); }, Ms{5000}))
        << nodes_of(lock).size() << " nodes left";
  }
}

// A lease taken over from a place in line is judged like any other: with the server paused past
// the lease, its stop signal fires, and the next client, which asks only once the server
// answers again, gets the lock from the server after that (the server ended the session) with a
// greater token.
TEST_F(ZooKeeperLine, ALeaseTakenFromTheLineStopsBeforeTheServerGivesItAway) {
  const std::string lock = unique("line-pause");
  auto held = holder_.acquire(lock);
  ASSERT_TRUE(held);
  std::optional<std::uint64_t> first;
  std::optional<std::chrono::steady_clock::time_point> stopped_at;
  std::thread waiter([&] {
    LeaderElector w(open(uri("session_timeout=2s&prefix=" + std::string(kPrefix))),
                    {.wait_time = 20s, .lease_time = 2s, .auto_extend = true});
    (void)w.run_if_leader(lock, [&](LeaderContext& ctx) {
      first = ctx.fencing_token();
      ServerPause pause;
      const auto paused_at = std::chrono::steady_clock::now();
      while (!ctx.stop_token().stop_requested() &&
             std::chrono::steady_clock::now() < paused_at + 5s)
        std::this_thread::sleep_for(10ms);
      if (ctx.stop_token().stop_requested()) stopped_at = std::chrono::steady_clock::now();
      std::this_thread::sleep_until(paused_at + 3s);  // a pause longer than the lease
    });
  });
  ASSERT_TRUE(eventually([&] { return nodes_of(lock).size() == 2; }, Ms{10000}));
  held.guard->release();  // the waiter's place is now first: it takes its node over
  waiter.join();
  ASSERT_TRUE(first.has_value()) << "the waiter never got the lock from its place in line";
  ASSERT_TRUE(stopped_at.has_value()) << "no stop signal while the server was paused";
  LeaderElector next(process_store(), {.wait_time = 10s, .lease_time = 2s});
  auto token = next.run_if_leader(lock, [](LeaderContext& c) { return c.fencing_token(); });
  const auto granted_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(token.has_value());
  EXPECT_GT(*token, *first);
  EXPECT_LT(*stopped_at, granted_at) << "the server gave the lease away before the stop signal";
}

TEST_F(ZooKeeperLine, AWaiterThatGivesUpOrIsCancelledLeavesNoNodeInLine) {
  const std::string lock = unique("line-leave");
  auto held = holder_.acquire(lock);
  ASSERT_TRUE(held);

  auto store = process_store();
  LeaderElector patient(store, {.wait_time = 700ms, .lease_time = 10s});
  RunResult<int> r = patient.run_if_leader_result(lock, [] { return 1; });
  ASSERT_TRUE(r.skipped());
  EXPECT_EQ(r.skip_reason(), SkipReason::contention);
  EXPECT_EQ(nodes_of(lock).size(), 1u) << "the waiter's node stayed after its wait ended";

  LeaderElector cancelled(store, {.wait_time = 30s, .lease_time = 10s});
  std::stop_source stop;
  std::thread t([&] {
    RunResult<int> c = cancelled.run_if_leader_result(
        lock, [] { return 1; }, stop.get_token());
    ASSERT_TRUE(c.skipped());
    EXPECT_EQ(c.skip_reason(), SkipReason::cancelled);
  });
  ASSERT_TRUE(eventually([&] { return nodes_of(lock).size() == 2; }, Ms{10000}));
  stop.request_stop();
  t.join();
  EXPECT_EQ(nodes_of(lock).size(), 1u) << "the cancelled waiter's node stayed";

  // The holder's release frees the lock for anyone at once: no stale place in line blocks it.
  held.guard->release();
  LeaderElector later(process_store(), {.wait_time = 0s, .lease_time = 10s});
  EXPECT_TRUE(later.run_if_leader(lock, [] {}));
}

TEST_F(ZooKeeperLine, UnfairWaitersAndSkippersKeepNoPlace) {
  const std::string lock = unique("line-unfair");
  auto held = holder_.acquire(lock);
  ASSERT_TRUE(held);
  std::atomic<bool> done{false};
  std::thread t([&] {
    LeaderElector unfair(process_store(), {.wait_time = 1500ms, .lease_time = 10s, .fair = false});
    EXPECT_FALSE(unfair.run_if_leader(lock, [] {}));
    done = true;
  });
  LeaderElector skipper(process_store(), {.wait_time = 0s, .lease_time = 10s});
  std::size_t most = 0;
  while (!done) {
    EXPECT_FALSE(skipper.run_if_leader(lock, [] {}));
    most = std::max(most, nodes_of(lock).size());
    std::this_thread::sleep_for(50ms);
  }
  t.join();
  // Their attempts create and withdraw a node each (a listing may catch one in flight), but
  // none stays: only the holder's node remains.
  EXPECT_EQ(nodes_of(lock).size(), 1u);
  EXPECT_LE(most, 3u);
  held.guard->release();
}

}  // namespace
}  // namespace leader::zktest
