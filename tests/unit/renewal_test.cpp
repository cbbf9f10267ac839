// Renewal, local deadlines, events and history with a fake clock (no sleeping on lease time).

#include <gtest/gtest.h>

#include <atomic>
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

struct Recorder : ElectionListener, HistorySink {
  std::mutex mu;
  std::vector<std::string> events;
  void add(std::string e) {
    std::lock_guard l(mu);
    events.push_back(std::move(e));
  }
  void on_elected(const LeaseInfo& l) override { add("elected " + l.lock); }
  void on_revoked(const LeaseInfo& l) override { add("revoked " + l.lock); }
  void on_skipped(const std::string& lock, const Skipped& s) override {
    add("skipped " + lock + " " + std::string(to_string(s.reason)));
  }
  void on_lost(const LeaseInfo& l, const std::string&) override { add("lost " + l.lock); }
  std::vector<std::string> history;  // written on the history feed's thread
  void record(const HistoryRecord& r) override {
    std::lock_guard l(mu);
    history.push_back(std::string(to_string(r.outcome)) + " " + r.lock);
  }
  std::vector<std::string> history_snapshot() {
    std::lock_guard l(mu);
    return history;
  }
  std::vector<std::string> snapshot() {
    std::lock_guard l(mu);
    return events;
  }
};

struct FakeWorld {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<LeaseStore> store = make_memory_store({.clock = clock});
  std::shared_ptr<Recorder> rec = std::make_shared<Recorder>();
  ElectorHooks hooks() { return {clock, rec, rec, 7}; }
};

TEST(Renewal, AutoExtendRenewsAtAThirdOfTheLeaseOnTheFakeClock) {
  FakeWorld w;
  LeaderElector e(w.store, {.wait_time = 0s, .lease_time = 30s, .auto_extend = true}, w.hooks());
  auto held = e.acquire("job");
  ASSERT_TRUE(held);
  auto first_deadline = held.guard->context().deadline();
  EXPECT_EQ(first_deadline - held.guard->info().acquired_at, 24s);  // 30 s - 30 s / 5
  for (int i = 0; i < 12; ++i) {  // 132 s of fake time: over four leases' worth
    w.clock->advance(11s);        // renewals are due every 10 s +- 10 %
    ASSERT_TRUE(eventually([&] {
      return held.guard->context().deadline() == w.clock->now() + 24s;
    })) << "renewal did not keep up at step "
        << i;
  }
  EXPECT_TRUE(held.guard->context().still_leader());
  LeaderElector other(w.store, {.wait_time = 0s, .lease_time = 30s});
  EXPECT_FALSE(other.run_if_leader("job", [] {}));
}

TEST(Renewal, WithoutAutoExtendTheStopTokenFiresAtTheLocalDeadline) {
  FakeWorld w;
  LeaderElector e(w.store, {.wait_time = 0s, .lease_time = 10s}, w.hooks());
  auto held = e.acquire("job");
  ASSERT_TRUE(held);
  auto stop = held.guard->context().stop_token();
  w.clock->advance(7s);
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(stop.stop_requested());
  w.clock->advance(1s + 1ms);  // past 10 s - 2 s margin
  EXPECT_TRUE(eventually([&] { return stop.stop_requested(); }));
  EXPECT_FALSE(held.guard->context().still_leader());
  // The stop token fires first, so the work stops at once; the listener hears of the loss just
  // after, on the renewal thread: wait for it rather than racing it (a TSan run lost that race).
  EXPECT_TRUE(eventually([&] {
    auto ev = w.rec->snapshot();
    return std::find(ev.begin(), ev.end(), "lost job") != ev.end();
  }));
}

TEST(Renewal, FailingRenewalsFireTheStopTokenBeforeServerExpiry) {
  FakeWorld w;
  LeaderElector e(w.store, {.wait_time = 0s, .lease_time = 30s, .auto_extend = true}, w.hooks());
  auto held = e.acquire("job");
  ASSERT_TRUE(held);
  auto stop = held.guard->context().stop_token();
  set_memory_store_unavailable(*w.store, true);
  TimePoint fired{};
  for (int i = 0; i < 300 && !stop.stop_requested(); ++i) {
    w.clock->advance(100ms);
    std::this_thread::sleep_for(2ms);
    if (stop.stop_requested()) fired = w.clock->now();
  }
  ASSERT_TRUE(stop.stop_requested());
  EXPECT_LT(fired - held.guard->info().acquired_at, 30s);
  set_memory_store_unavailable(*w.store, false);
}

TEST(Renewal, ExtendMovesTheDeadlineAndFailsOnceTheLeaseIsGone) {
  FakeWorld w;
  LeaderElector e(w.store, {.wait_time = 0s, .lease_time = 10s}, w.hooks());
  auto held = e.acquire("job");
  ASSERT_TRUE(held);
  w.clock->advance(5s);
  EXPECT_TRUE(held.guard->context().extend(20s));
  // The default margin is a fifth of the ttl granted by this request: 20 s / 5.
  EXPECT_EQ(held.guard->context().deadline(), w.clock->now() + 16s);
  w.clock->advance(21s);  // expired on the "server"
  LeaderElector other(w.store, {.wait_time = 0s, .lease_time = 10s});
  EXPECT_TRUE(other.run_if_leader("job", [] {}));
  EXPECT_FALSE(held.guard->context().extend(10s));
  EXPECT_TRUE(held.guard->context().stop_token().stop_requested());
}

TEST(Events, AreReportedInOrderWithHistory) {
  FakeWorld w;
  LeaderElector e(w.store, {.wait_time = 0s, .lease_time = 10s}, w.hooks());
  EXPECT_TRUE(e.run_if_leader("a", [] {}));
  auto held = e.acquire("b");
  EXPECT_FALSE(e.run_if_leader("b", [] {}));
  EXPECT_THROW(e.run_if_leader("c", [] { throw std::runtime_error("x"); }), std::runtime_error);
  auto ev = w.rec->snapshot();
  std::vector<std::string> expected{"elected a", "revoked a", "elected b", "skipped b contention",
                                    "elected c", "revoked c"};
  EXPECT_EQ(ev, expected);
  // History is written off the election path, one record per ended acquisition.
  std::vector<std::string> history{"completed a", "failed c"};
  EXPECT_TRUE(eventually([&] { return w.rec->history_snapshot() == history; }));
}

TEST(BackendErrors, PolicyChoosesRethrowSkipOrFailOpen) {
  FakeWorld w;
  set_memory_store_unavailable(*w.store, true);
  LeaderElector rethrow(w.store, {.wait_time = 0s}, w.hooks());
  EXPECT_THROW(rethrow.run_if_leader("j", [] {}), BackendError);
  LeaderElector skip(w.store, {.wait_time = 0s, .on_backend_error = OnBackendError::skip});
  auto s = skip.run_if_leader_result("j", [] {});
  ASSERT_TRUE(s.skipped());
  EXPECT_EQ(s.skip_reason(), SkipReason::backend_error);
  LeaderElector open(w.store, {.wait_time = 0s, .on_backend_error = OnBackendError::fail_open});
  auto f = open.run_if_leader_result("j", [](LeaderContext& c) { return c.fencing_token(); });
  ASSERT_TRUE(f.elected());
  EXPECT_TRUE(f.lease()->fail_open);
  EXPECT_EQ(f.value(), 0u);
}

TEST(Backoff, WaitingRetriesUntilTheDeadlineOnTheFakeClock) {
  FakeWorld w;
  LeaderElector holder(w.store, {.wait_time = 0s, .lease_time = 60s}, w.hooks());
  auto held = holder.acquire("j");
  ASSERT_TRUE(held);
  LeaderElector waiter(w.store, {.wait_time = 5s, .lease_time = 60s}, w.hooks());
  std::atomic<bool> done{false};
  std::thread t([&] {
    EXPECT_FALSE(waiter.run_if_leader("j", [] {}));
    done = true;
  });
  for (int i = 0; i < 100 && !done; ++i) {
    w.clock->advance(100ms);
    std::this_thread::sleep_for(2ms);
  }
  t.join();
  EXPECT_TRUE(done);
}

TEST(Results, ExposeTheirAlternatives) {
  RunResult<int> e = Elected<int>{4, LeaseInfo{"l", "n", 9, 0, 1s, {}, false}};
  EXPECT_EQ(e.kind(), RunResult<int>::Kind::elected);
  EXPECT_EQ(e.value(), 4);
  EXPECT_EQ(e.lease()->fencing_token, 9u);
  RunResult<void> s = Skipped{SkipReason::cancelled, ""};
  EXPECT_TRUE(s.skipped());
  EXPECT_EQ(to_string(s.skip_reason()), "cancelled");
  EXPECT_THROW((void)s.error(), std::bad_variant_access);
  RunResult<void> f = ActionFailed{std::make_exception_ptr(std::runtime_error("x")), {}};
  EXPECT_TRUE(f.failed());
  EXPECT_EQ(to_string(ErrorCode::deadline_exceeded), "deadline_exceeded");
}

}  // namespace
}  // namespace leader

namespace leader {
namespace {

// A store that grants at most 5 s, as a ZooKeeper session with a short timeout does.
class CappedStore : public LeaseStore {
 public:
  explicit CappedStore(std::shared_ptr<LeaseStore> inner) : inner_(std::move(inner)) {}
  std::string_view scheme() const override { return "capped"; }
  Acquired try_acquire(const LeaseRequest& r, Deadline d) override {
    LeaseRequest capped = r;
    capped.ttl = std::min(r.ttl, kCap);
    return inner_->try_acquire(capped, d);
  }
  Renewal renew(const Lease& l, Duration ttl, Deadline d) override {
    return inner_->renew(l, std::min(ttl, kCap), d);
  }
  LeaseStatus release(const Lease& l, Duration k, Deadline d) override {
    return inner_->release(l, k, d);
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
  static constexpr Duration kCap = std::chrono::seconds(5);

 private:
  std::shared_ptr<LeaseStore> inner_;
};

TEST(Renewal, AShorterGrantFromTheStoreShortensTheLocalDeadline) {
  auto clock = std::make_shared<FakeClock>();
  auto store = std::make_shared<CappedStore>(make_memory_store({.clock = clock}));
  LeaderElector e(store, {.wait_time = 0s, .lease_time = 30s}, {.clock = clock});
  auto held = e.acquire("job");
  ASSERT_TRUE(held);
  EXPECT_EQ(held.guard->context().deadline() - held.guard->info().acquired_at, 4s);  // 5 s - 1 s
}

}  // namespace
}  // namespace leader
