// The renewal scheduler's batches (issue 14, target 1), on a fake clock: renewals of one store
// that fall due together go out in one renew_batch call, a lease may join a batch a little early
// (a fifth of its renewal period), and each lease's outcome is its own: a lost one stops only its
// own action, an unknown one keeps only its own deadline where it was, a batch that fails as a
// whole leaves every lease's deadline in place and is retried.

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "leader/leader.hpp"
#include "leader/stores/memory.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;

template <class Pred>
bool eventually(Pred p) {
  for (int i = 0; i < 2000 && !p(); ++i) std::this_thread::sleep_for(1ms);
  return p();
}

/// Forwards to a memory store; counts renew and renew_batch calls and can script one lock's
/// outcome inside a batch (lost, or an error) or fail whole batches.
class BatchingStore final : public LeaseStore {
 public:
  explicit BatchingStore(std::shared_ptr<LeaseStore> inner) : inner_(std::move(inner)) {}

  std::string_view scheme() const override { return "batching"; }
  Acquired try_acquire(const LeaseRequest& r, Deadline d) override {
    return inner_->try_acquire(r, d);
  }
  Renewal renew(const Lease& l, Duration ttl, Deadline d) override {
    singles_.fetch_add(1);
    return inner_->renew(l, ttl, d);
  }
  std::vector<BatchRenewal> renew_batch(std::span<const RenewalRequest> requests,
                                        Deadline d) override {
    {
      std::lock_guard lock(mu_);
      sizes_.push_back(requests.size());
    }
    if (fail_batches_.load()) throw BackendError(ErrorCode::unavailable, "batching", "down");
    auto out = inner_->renew_batch(requests, d);
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (requests[i].lease->lock == lost_lock_) out[i].renewal = {};
      if (requests[i].lease->lock == error_lock_) {
        out[i].renewal = {};
        out[i].error = BackendError(ErrorCode::deadline_exceeded, "batching", "no reply");
      }
    }
    return out;
  }
  LeaseStatus release(const Lease& l, Duration keep_for, Deadline d) override {
    return inner_->release(l, keep_for, d);
  }
  LockState inspect(std::string_view lock, Deadline d) override { return inner_->inspect(lock, d); }
  void put_candidate(std::string_view g, const Candidate& c, Duration t, Deadline d) override {
    inner_->put_candidate(g, c, t, d);
  }
  std::vector<Candidate> list_candidates(std::string_view g, Deadline d) override {
    return inner_->list_candidates(g, d);
  }
  void remove_candidate(std::string_view g, std::string_view n, Deadline d) override {
    inner_->remove_candidate(g, n, d);
  }

  std::vector<std::size_t> sizes() {
    std::lock_guard lock(mu_);
    return sizes_;
  }
  int singles() const { return singles_.load(); }
  void lose(std::string lock) {
    std::lock_guard l(mu_);
    lost_lock_ = std::move(lock);
  }
  void error_on(std::string lock) {
    std::lock_guard l(mu_);
    error_lock_ = std::move(lock);
  }
  void fail_batches(bool on) { fail_batches_.store(on); }

 private:
  std::shared_ptr<LeaseStore> inner_;
  std::mutex mu_;
  std::vector<std::size_t> sizes_;
  std::string lost_lock_;
  std::string error_lock_;
  std::atomic<int> singles_{0};
  std::atomic<bool> fail_batches_{false};
};

struct World {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<BatchingStore> store =
      std::make_shared<BatchingStore>(make_memory_store({.clock = clock}));
  LeaderElector elector{store,
                        {.wait_time = 0s, .lease_time = 30s, .auto_extend = true},
                        ElectorHooks{.clock = clock}};
  std::vector<LeaseGuard> held;

  void acquire(int n) {
    for (int i = 0; i < n; ++i) {
      auto got = elector.acquire("job-" + std::to_string(i));
      ASSERT_TRUE(got.guard) << i;
      held.push_back(std::move(*got.guard));
    }
  }
  /// Every lease's deadline is 24 s after the fake now (renewed at now: 30 s - margin 6 s).
  bool all_renewed_now() {
    for (auto& g : held)
      if (g.context().deadline() != clock->now() + 24s) return false;
    return true;
  }
};

TEST(RenewalBatch, LeasesAcquiredTogetherRenewInOneBatchEvenWhenTheirJitterDiffers) {
  World w;
  w.acquire(50);
  // Each lease is due at 10 s +- 10 % (its jitter); the first due one opens the batch and the
  // others, due within 2 s (a fifth of the period) after it, join early.
  TimePoint start = w.clock->now();
  while (w.store->sizes().empty() && w.clock->now() - start < 12s) {
    w.clock->advance(100ms);
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(eventually([&] {
    std::size_t renewed = 0;
    for (auto s : w.store->sizes()) renewed += s;
    return renewed == 50;
  })) << "not every lease was renewed";
  EXPECT_EQ(w.store->sizes().size(), 1U) << "renewals due within the early window were split";
  EXPECT_EQ(w.store->singles(), 0);
  for (auto& g : w.held) EXPECT_TRUE(g.context().still_leader());
  // None before the earliest due instant: 10 s - 10 % jitter.
  EXPECT_GE(w.clock->now() - start, 9s);
}

// The batch's bookkeeping is done as a whole (one lock of the bus for its `renewed` events, one of
// the timer queue): still one `renewed` per lease renewed, none for the lost one, each lock's
// state carrying its lease's new deadline, and the renewals that follow are due again.
TEST(RenewalBatch, EveryLeaseOfABatchGetsItsOwnRenewedEventAndState) {
  World w;
  std::mutex mu;
  std::multiset<std::string> renewed;
  auto sub = w.elector.events().subscribe([&](const ElectionEvent& e) {
    if (e.kind != EventKind::renewed) return;
    std::lock_guard l(mu);
    renewed.insert(e.lock);
  });
  w.acquire(70);  // 64 and more: the batch is split between the lane's two workers
  w.store->lose("job-3");
  w.clock->advance(12s);  // every lease due at once
  ASSERT_TRUE(eventually([&] {
    for (std::size_t i = 0; i < w.held.size(); ++i)
      if (i != 3 && w.held[i].context().deadline() != w.clock->now() + 24s) return false;
    return true;
  }));
  // The deadlines move before the batch's events are published (after its last lease): wait for
  // the events themselves, then for the subscriber to have nothing more queued.
  ASSERT_TRUE(eventually([&] {
    std::lock_guard l(mu);
    return renewed.size() >= 69U;
  })) << "renewed events missing";
  ASSERT_TRUE(sub.wait_idle(5s));
  {
    std::lock_guard l(mu);
    EXPECT_EQ(renewed.size(), 69U);
    EXPECT_EQ(renewed.count("job-3"), 0U);
    for (int i = 0; i < 70; ++i) {
      if (i != 3) {
        EXPECT_EQ(renewed.count("job-" + std::to_string(i)), 1U) << i;
      }
    }
  }
  for (std::size_t i = 0; i < w.held.size(); ++i) {
    const LeadershipState st = w.elector.leadership("job-" + std::to_string(i));
    EXPECT_EQ(st.held, i != 3) << i;
    if (i != 3) {
      EXPECT_EQ(st.deadline, w.held[i].context().deadline()) << i;
    }
  }
  // Re-keyed in the timer queue: the next round renews them again.
  const TimePoint second = w.clock->now();
  w.clock->advance(12s);
  ASSERT_TRUE(eventually([&] {
    for (std::size_t i = 0; i < w.held.size(); ++i)
      if (i != 3 && w.held[i].context().deadline() <= second + 24s) return false;
    return true;
  })) << "a lease was not renewed in the second round";
}

TEST(RenewalBatch, ALostLeaseInABatchStopsOnlyItsOwnAction) {
  World w;
  w.acquire(8);
  w.store->lose("job-3");
  w.clock->advance(12s);  // every lease due at once
  ASSERT_TRUE(eventually([&] { return w.held[3].context().stop_token().stop_requested(); }));
  ASSERT_TRUE(eventually([&] {
    for (std::size_t i = 0; i < w.held.size(); ++i)
      if (i != 3 && w.held[i].context().deadline() != w.clock->now() + 24s) return false;
    return true;
  })) << "the other leases of the batch were not renewed";
  for (std::size_t i = 0; i < w.held.size(); ++i)
    EXPECT_EQ(w.held[i].context().still_leader(), i != 3) << i;
  EXPECT_EQ(w.store->sizes(), std::vector<std::size_t>{8});
}

TEST(RenewalBatch, AnUnknownOutcomeKeepsOnlyThatLeasesDeadlineAndIsRetried) {
  World w;
  w.acquire(6);
  const TimePoint first_deadline = w.held[2].context().deadline();
  w.store->error_on("job-2");
  w.clock->advance(12s);
  ASSERT_TRUE(eventually([&] {
    for (std::size_t i = 0; i < w.held.size(); ++i)
      if (i != 2 && w.held[i].context().deadline() != w.clock->now() + 24s) return false;
    return true;
  }));
  // Lease 2's deadline did not move (its renewal may or may not have landed), nor was it lost.
  EXPECT_LE(w.held[2].context().deadline(), first_deadline);
  EXPECT_TRUE(w.held[2].context().still_leader());
  // Its retry (a lone lease: a single renew) succeeds once the store answers again.
  w.store->error_on("");
  const int singles = w.store->singles();
  w.clock->advance(2s);
  ASSERT_TRUE(eventually([&] { return w.store->singles() > singles; })) << "no retry";
  ASSERT_TRUE(eventually([&] { return w.held[2].context().deadline() == w.clock->now() + 24s; }));
}

TEST(RenewalBatch, ABatchThatFailsAsAWholeLeavesEveryDeadlineAndStopsThemAllInTime) {
  World w;
  w.acquire(5);
  const TimePoint deadline = w.held[0].context().deadline();
  w.store->fail_batches(true);
  w.clock->advance(12s);
  ASSERT_TRUE(eventually([&] { return !w.store->sizes().empty(); }));
  for (auto& g : w.held) {
    EXPECT_LE(g.context().deadline(), deadline);
    EXPECT_TRUE(g.context().still_leader());
  }
  // Still failing up to the local deadline (retried meanwhile): every action is told to stop.
  while (w.clock->now() < deadline) {
    w.clock->advance(
        std::min<Duration>(500ms, std::chrono::duration_cast<Duration>(deadline - w.clock->now())));
    std::this_thread::sleep_for(2ms);
  }
  for (auto& g : w.held)
    EXPECT_TRUE(eventually([&] { return g.context().stop_token().stop_requested(); }));
  EXPECT_GT(w.store->sizes().size(), 1U) << "the failed batch was never retried";
}

}  // namespace
}  // namespace leader
