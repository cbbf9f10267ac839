// observe_lock over ZooKeeper watches (LockWatcher) against the real test server: each change is
// reported, in order, and promptly; a holder's session expiry and a lease reaching its ttl wake a
// watch; the watcher's own session expiry and a paused server end or re-arm it, never past the
// deadline (a read while the session moves may fail as inspect() would); a stop request ends a
// long watch. The release-to-callback latency of the watch and of the inspect() poll is printed
// (p50 over kChanges releases). No timed assertion on it.

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "leader/detail/store_wrapper.hpp"
#include "leader/leader.hpp"
#include "leader/lock_watching.hpp"
#include "zk_session.hpp"
#include "zk_store.hpp"
#include "zk_test_util.hpp"

namespace leader::zktest {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kChanges = 20;

std::shared_ptr<LeaseStore> watch_store(const std::string& timeout = "2s") {
  return open(uri("session_timeout=" + timeout + "&prefix=/leader-watch"));
}

LeaseRequest request(const std::string& lock, Ms ttl = 10s, int slots = 0) {
  return {lock, new_owner_token(), "watch-node", ttl, slots};
}

detail::zk::Session& base_session(LeaseStore& store) {
  return dynamic_cast<detail::zk::ZooKeeperStore&>(detail::innermost(store))
      .base_session_for_test();
}

// The ZooKeeper store seen only as a LeaseStore: observe_lock polls it.
class PollOnly final : public LeaseStore {
 public:
  explicit PollOnly(std::shared_ptr<LeaseStore> inner) : inner_(std::move(inner)) {}
  [[nodiscard]] std::string_view scheme() const override { return inner_->scheme(); }
  Acquired try_acquire(const LeaseRequest& r, Deadline d) override {
    return inner_->try_acquire(r, d);
  }
  Renewal renew(const Lease& l, Duration ttl, Deadline d) override {
    return inner_->renew(l, ttl, d);
  }
  LeaseStatus release(const Lease& l, Duration keep_for, Deadline d) override {
    return inner_->release(l, keep_for, d);
  }
  [[nodiscard]] LockState inspect(std::string_view lock, Deadline d) override {
    return inner_->inspect(lock, d);
  }
  void put_candidate(std::string_view g, const Candidate& c, Duration ttl, Deadline d) override {
    inner_->put_candidate(g, c, ttl, d);
  }
  [[nodiscard]] std::vector<Candidate> list_candidates(std::string_view g, Deadline d) override {
    return inner_->list_candidates(g, d);
  }
  void remove_candidate(std::string_view g, std::string_view id, Deadline d) override {
    inner_->remove_candidate(g, id, d);
  }

 private:
  std::shared_ptr<LeaseStore> inner_;
};

// What an observer reported: the fencing token of each snapshot (0 = free) and when it came.
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
  // Waits until `n` snapshots were reported; returns when the n-th came.
  std::optional<Clock::time_point> wait_for(std::size_t n, Duration limit = 20s) {
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, limit, [&] { return tokens.size() >= n; })) return std::nullopt;
    return at[n - 1];
  }
};

Ms p50(std::vector<Ms> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? Ms{0} : v[v.size() / 2];
}

Ms since(Clock::time_point start) { return std::chrono::duration_cast<Ms>(Clock::now() - start); }

// Acquires and releases `lock` kChanges times through `store`, each step once `observer` saw the
// last; checks the reported order and returns the release-to-callback latencies.
std::vector<Ms> churn(LeaseStore& store, const std::string& lock, LeaseStore& observed,
                      ObserveOptions options) {
  Seen seen;
  std::jthread observer([&](const std::stop_token& stop) {
    observe_lock(
        observed, lock, [&](const LockState& s) { return seen.record(s); }, stop, options);
  });
  std::vector<Ms> latencies;
  std::vector<std::uint64_t> expected{0};
  EXPECT_TRUE(seen.wait_for(1));
  for (int i = 0; i < kChanges; ++i) {
    auto got = store.try_acquire(request(lock), soon());
    if (!got) {
      ADD_FAILURE() << "acquire " << i << " failed";
      break;
    }
    expected.push_back(got.lease->fencing_token);
    if (!seen.wait_for(expected.size())) {
      ADD_FAILURE() << "the acquire " << i << " was never reported";
      break;
    }
    const auto released = Clock::now();
    EXPECT_EQ(store.release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
    expected.push_back(0);
    auto reported = seen.wait_for(expected.size());
    if (!reported) {
      ADD_FAILURE() << "the release " << i << " was never reported";
      break;
    }
    latencies.push_back(std::chrono::duration_cast<Ms>(*reported - released));
  }
  observer.request_stop();
  observer.join();
  std::lock_guard l(seen.mu);
  EXPECT_EQ(seen.tokens, expected);  // every change, in order, none twice
  return latencies;
}

TEST(ZooKeeperWatch, EachChangeIsReportedInOrderAndTheLatencyIsPrinted) {
  auto s = watch_store();
  ASSERT_NE(lock_watcher(*s), nullptr);
  PollOnly poll(s);
  ASSERT_EQ(lock_watcher(poll), nullptr);
  const auto name = unique("churn");  // never locked before: the first watch is an exists watch
  // The same interval for both: the watch does not wait for it, the poll does (and as each step
  // follows the report of the last, a release comes just after a poll: about one interval).
  const ObserveOptions options{.interval = 200ms};
  const auto watched = churn(*s, name, *s, options);
  const auto polled = churn(*s, name, poll, options);
  ASSERT_EQ(watched.size(), static_cast<std::size_t>(kChanges));
  ASSERT_EQ(polled.size(), static_cast<std::size_t>(kChanges));
  std::printf(
      "zookeeper release-to-callback latency, p50 of %d: watch %lld ms, poll (interval 200ms) "
      "%lld ms\n",
      kChanges, static_cast<long long>(p50(watched).count()),
      static_cast<long long>(p50(polled).count()));
}

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

TEST(ZooKeeperWatch, ADeadlineWithNoChangeReturnsTheUnchangedLockAndStopEndsTheWait) {
  auto s = watch_store();
  LockWatcher* w = lock_watcher(*s);
  ASSERT_NE(w, nullptr);
  const auto name = unique("quiet");
  auto got = s->try_acquire(request(name), soon());
  ASSERT_TRUE(got);
  const LockState before = s->inspect(name, soon());
  std::stop_source never;
  auto start = Clock::now();
  const LockState after = w->watch(name, before, Deadline::after(500ms), never.get_token());
  EXPECT_TRUE(same_holders(before, after));
  EXPECT_GE(since(start), 450ms) << "returned before the deadline without a change";
  EXPECT_LT(since(start), 5s);

  std::stop_source stop;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(300ms);
    stop.request_stop();
  });
  start = Clock::now();
  const LockState stopped = w->watch(name, before, Deadline::after(60s), stop.get_token());
  EXPECT_TRUE(same_holders(before, stopped));
  EXPECT_LT(since(start), 30s) << "a stop request did not end the watch";
  // Already requested: returns at once.
  EXPECT_TRUE(same_holders(before, w->watch(name, before, Deadline::after(60s), stop.get_token())));

  // A change made before the watch (the caller's snapshot is stale) is returned at once.
  EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
  const LockState free = w->watch(name, before, Deadline::after(60s), never.get_token());
  EXPECT_FALSE(free.held());
  EXPECT_THROW((void)w->watch("bad/name", free, Deadline::after(1s), never.get_token()),
               InvalidArgument);
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
