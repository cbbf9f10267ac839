// Waiting in line on etcd (LeaseRequest::wait_in_line, issue 14 target 4): a fair waiter keeps
// its contender key under the lock's prefix between attempts, as etcd's concurrency.Mutex does,
// so the holders follow the keys' create revisions across processes, and a waiter that stops
// waiting leaves no key behind. Each "process" is a store object of its own (its own session
// leases, its own in-process wait queue): to the server and to the elector that is what another
// process is. The judge of every order and of every hand-over is the server: its keys, their
// create revisions (the fencing tokens) and its own grants.

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "clients/etcd/codec.hpp"
#include "etcd/etcd_store.hpp"
#include "etcd_test_util.hpp"

namespace leader::etcdtest {
namespace {

using namespace std::chrono_literals;

const std::string kLinePrefix = "/leader-line";

std::shared_ptr<LeaseStore> line_process_store() { return open(uri(kLinePrefix)); }

std::shared_ptr<etcd::EtcdStore> line_raw_store() {
  return std::make_shared<etcd::EtcdStore>(etcd::Config::from_uri(Uri::parse(uri(kLinePrefix))));
}

/// The number of keys under the lock's prefix (holder and places in line), read by a client of
/// its own.
std::int64_t keys_of(const std::string& lock) {
  static auto reader = line_raw_store();
  const std::string prefix = reader->lock_prefix(lock);
  auto r = reader->gateway().call("/v3/kv/range",
                                  {{"key", etcd::base64_encode(prefix)},
                                   {"range_end", etcd::base64_encode(etcd::prefix_end(prefix))},
                                   {"count_only", true}},
                                  soon());
  return etcd::int_field(r, "count");
}

class EtcdLine : public ::testing::Test {
 protected:
  std::shared_ptr<LeaseStore> holder_store_ = line_process_store();
  LeaderElector holder_{holder_store_, {.wait_time = 0s, .lease_time = 10s}};
};

TEST_F(EtcdLine, WaitersOfSeparateProcessesAreServedInArrivalOrder) {
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
      LeaderElector e(line_process_store(), {.wait_time = 30s, .lease_time = 10s});
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
    // Waiter i's first attempt (and so its key) comes before waiter i + 1's.
    ASSERT_TRUE(eventually([&] { return keys_of(lock) == i + 2; }, Ms{10000}))
        << "waiter " << i << " has no key in line: " << keys_of(lock) << " keys";
  }
  held.guard->release();
  for (auto& t : waiters) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3})) << "served out of arrival order";
  std::uint64_t last = first_token;
  for (std::uint64_t t : tokens) {
    EXPECT_GT(t, last) << "fencing tokens must grow in the order of the holders";
    last = t;
  }
  EXPECT_EQ(keys_of(lock), 0) << "keys left after every waiter ran";
}

// Threads of one process share its in-process queue: only its head stands in the store's line.
TEST_F(EtcdLine, WaitersOfOneProcessAndOfOthersAllGetTheirTurn) {
  auto shared = holder_store_;  // the holder's process
  std::vector<std::shared_ptr<LeaseStore>> others{line_process_store(), line_process_store()};
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
                        {.wait_time = 10s, .lease_time = 10s});
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
    EXPECT_EQ(keys_of(lock), 0) << "round " << round;
  }
}

// A lease taken over from a place in line is judged like any other: with the server paused past
// the lease, its stop signal fires; the next client, which asks only once the server answers
// again, is granted by the server only after that (the server expired the session) and with a
// greater token.
TEST_F(EtcdLine, ALeaseTakenFromTheLineStopsBeforeTheServerGivesItAway) {
  const std::string lock = unique("line-pause");
  auto held = holder_.acquire(lock);
  ASSERT_TRUE(held);
  std::optional<std::uint64_t> first;
  std::optional<std::chrono::steady_clock::time_point> stopped_at;
  std::thread waiter([&] {
    LeaderElector w(line_process_store(),
                    {.wait_time = 20s, .lease_time = 3s, .auto_extend = true});
    (void)w.run_if_leader(lock, [&](LeaderContext& ctx) {
      first = ctx.fencing_token();
      test::ProcessPause pause(etcd_pid());
      const auto paused_at = std::chrono::steady_clock::now();
      while (!ctx.stop_token().stop_requested() &&
             std::chrono::steady_clock::now() < paused_at + 6s)
        std::this_thread::sleep_for(10ms);
      if (ctx.stop_token().stop_requested()) stopped_at = std::chrono::steady_clock::now();
      std::this_thread::sleep_until(paused_at + 4500ms);  // a pause longer than the lease
    });
  });
  ASSERT_TRUE(eventually([&] { return keys_of(lock) == 2; }, Ms{10000}));
  held.guard->release();  // the waiter's key is now the lowest: its turn
  waiter.join();
  ASSERT_TRUE(first.has_value()) << "the waiter never got the lock from its place in line";
  ASSERT_TRUE(stopped_at.has_value()) << "no stop signal while the server was paused";
  LeaderElector next(line_process_store(), {.wait_time = 15s, .lease_time = 3s});
  auto token = next.run_if_leader(lock, [](LeaderContext& c) { return c.fencing_token(); });
  const auto granted_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(token.has_value());
  EXPECT_GT(*token, *first);
  EXPECT_LT(*stopped_at, granted_at) << "the server gave the lease away before the stop signal";
}

TEST_F(EtcdLine, AWaiterThatGivesUpOrIsCancelledLeavesNoKeyInLine) {
  const std::string lock = unique("line-leave");
  auto held = holder_.acquire(lock);
  ASSERT_TRUE(held);

  auto store = line_process_store();
  LeaderElector patient(store, {.wait_time = 700ms, .lease_time = 10s});
  RunResult<int> r = patient.run_if_leader_result(lock, [] { return 1; });
  ASSERT_TRUE(r.skipped());
  EXPECT_EQ(r.skip_reason(), SkipReason::contention);
  EXPECT_EQ(keys_of(lock), 1) << "the waiter's key stayed after its wait ended";

  LeaderElector cancelled(store, {.wait_time = 30s, .lease_time = 10s});
  std::stop_source stop;
  std::thread t([&] {
    RunResult<int> c = cancelled.run_if_leader_result(
        lock, [] { return 1; }, stop.get_token());
    ASSERT_TRUE(c.skipped());
    EXPECT_EQ(c.skip_reason(), SkipReason::cancelled);
  });
  ASSERT_TRUE(eventually([&] { return keys_of(lock) == 2; }, Ms{10000}));
  stop.request_stop();
  t.join();
  EXPECT_EQ(keys_of(lock), 1) << "the cancelled waiter's key stayed";

  // The holder's release frees the lock for anyone at once: no stale place blocks it.
  held.guard->release();
  LeaderElector later(line_process_store(), {.wait_time = 0s, .lease_time = 10s});
  EXPECT_TRUE(later.run_if_leader(lock, [] {}));
}

TEST_F(EtcdLine, UnfairWaitersAndSkippersKeepNoPlace) {
  const std::string lock = unique("line-unfair");
  auto held = holder_.acquire(lock);
  ASSERT_TRUE(held);
  std::atomic<bool> done{false};
  std::thread t([&] {
    LeaderElector unfair(line_process_store(),
                         {.wait_time = 1500ms, .lease_time = 10s, .fair = false});
    EXPECT_FALSE(unfair.run_if_leader(lock, [] {}));
    done = true;
  });
  LeaderElector skipper(line_process_store(), {.wait_time = 0s, .lease_time = 10s});
  while (!done) {
    EXPECT_FALSE(skipper.run_if_leader(lock, [] {}));
    EXPECT_EQ(keys_of(lock), 1) << "a contender that does not wait in line wrote a key";
    std::this_thread::sleep_for(50ms);
  }
  t.join();
  held.guard->release();
}

// The store's side, call by call: repeated attempts of one owner keep one key (its place), the
// turn comes when the key is the lowest and its token is that key's create revision, and
// inspect() shows only the holder, never a place in line.
TEST_F(EtcdLine, AttemptsKeepOnePlaceAndTheTurnIsTheKeysOwnRevision) {
  const std::string lock = unique("line-store");
  auto s = line_raw_store();
  LeaseRequest holder{lock, new_owner_token(), "holder", Ms{10000}, 0};
  auto got = s->try_acquire(holder, soon());
  ASSERT_TRUE(got);
  LeaseRequest waiter{lock, new_owner_token(), "waiter", Ms{10000}, 0};
  waiter.wait_in_line = true;
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(s->try_acquire(waiter, soon()));
  EXPECT_EQ(keys_of(lock), 2);
  const LockState state = s->inspect(lock, soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].node_id, "holder");
  // Not its turn: a wait for the key ahead ends at its deadline.
  const auto before = std::chrono::steady_clock::now();
  EXPECT_EQ(s->wait_turn(waiter, Deadline::after(300ms), {}), std::optional<bool>(false));
  EXPECT_GE(std::chrono::steady_clock::now() - before, 250ms);
  // The holder leaves: the wait ends with it, and the next attempt is granted.
  std::thread release([&] {
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
  });
  EXPECT_EQ(s->wait_turn(waiter, Deadline::after(10s), {}), std::optional<bool>(true));
  release.join();
  auto turn = s->try_acquire(waiter, soon());
  ASSERT_TRUE(turn);
  EXPECT_GT(turn.lease->fencing_token, got.lease->fencing_token);
  const LockState now = s->inspect(lock, soon());
  ASSERT_EQ(now.holders.size(), 1u);
  EXPECT_EQ(now.holders[0].fencing_token, turn.lease->fencing_token);
  EXPECT_EQ(now.holders[0].owner, waiter.owner);
  EXPECT_EQ(s->wait_turn(waiter, soon(), {}), std::optional<bool>(true));  // its own: the lowest
  EXPECT_EQ(s->release(*turn.lease, Ms{0}, soon()), LeaseStatus::ok);
  EXPECT_EQ(keys_of(lock), 0);
  EXPECT_EQ(s->wait_turn(waiter, soon(), {}), std::nullopt) << "no place, no turn";
}

// A removal of a place that fails (here: its deadline had passed) is sent again by the store's
// next call, so a waiter's key never outlives it on a session this store keeps alive.
TEST_F(EtcdLine, AFailedRemovalIsSentAgainByTheNextCall) {
  const std::string lock = unique("line-retry");
  auto s = line_raw_store();
  LeaseRequest holder{lock, new_owner_token(), "holder", Ms{10000}, 0};
  auto got = s->try_acquire(holder, soon());
  ASSERT_TRUE(got);
  LeaseRequest waiter{lock, new_owner_token(), "waiter", Ms{10000}, 0};
  waiter.wait_in_line = true;
  EXPECT_FALSE(s->try_acquire(waiter, soon()));
  ASSERT_EQ(keys_of(lock), 2);
  s->leave_line(waiter, Deadline::after(Ms{0}));  // fails: nothing is sent
  EXPECT_EQ(keys_of(lock), 2);
  Lease lease = *got.lease;
  EXPECT_EQ(s->renew(lease, Ms{10000}, soon()).status, LeaseStatus::ok);
  EXPECT_EQ(keys_of(lock), 1) << "the renewal did not send the removal again";
  EXPECT_EQ(s->release(lease, Ms{0}, soon()), LeaseStatus::ok);
  EXPECT_EQ(keys_of(lock), 0);
}

// etcd's own Mutex and ours share one line: an `etcdctl lock` that queued first is served first.
TEST_F(EtcdLine, AnEtcdctlWaiterAheadInLineIsServedFirst) {
  const std::string lock = unique("line-etcdctl");
  auto held = holder_.acquire(lock);
  ASSERT_TRUE(held);
  test::ChildProcess etcdctl({"etcdctl", "--endpoints=http://" + endpoint(), "lock",
                              kLinePrefix + "/" + lock, "--", "sh", "-c",
                              "echo GOT; sleep 1; echo DONE"});
  ASSERT_TRUE(eventually([&] { return keys_of(lock) == 2; }, Ms{10000}));
  std::atomic<bool> ran{false};
  std::thread ours([&] {
    LeaderElector e(line_process_store(), {.wait_time = 20s, .lease_time = 10s});
    EXPECT_TRUE(e.run_if_leader(lock, [&] { ran = true; }));
  });
  ASSERT_TRUE(eventually([&] { return keys_of(lock) == 3; }, Ms{10000}));
  held.guard->release();
  EXPECT_EQ(etcdctl.next_line(Ms{5000}).value_or("(none)"), "GOT");
  EXPECT_FALSE(ran.load()) << "ours ran while etcdctl, ahead of it in line, held the lock";
  EXPECT_EQ(etcdctl.next_line(Ms{5000}).value_or("(none)"), "DONE");
  ours.join();
  EXPECT_TRUE(ran.load());
  EXPECT_EQ(etcdctl.wait(), 0);
}

}  // namespace
}  // namespace leader::etcdtest
