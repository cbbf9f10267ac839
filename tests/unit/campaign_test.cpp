// leader::Campaign on the memory store (in-process only; the multi-process cases on every real
// store are tests/faults scenario "campaign"). Real time with short leases: the campaign's own
// pauses run on the steady clock. Who holds the lock is judged by the store (inspect), not by
// the campaigns' own view.

#include "leader/campaign.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <vector>

#include "leader/async.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/lock_watching.hpp"
#include "scripted_store.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;
using testkit::eventually;
using testkit::ScriptedStore;

ElectionOptions fast(const std::string& node) {
  return {.wait_time = 0s, .lease_time = 600ms, .auto_extend = true, .node_id = node};
}

CampaignOptions quick() { return {.retry_period = 20ms, .observe_interval = 20ms}; }

// One campaigning replica with counters of its callbacks.
struct Replica {
  std::string node;
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  std::mutex mu;
  std::vector<std::uint64_t> tokens;
  std::unique_ptr<Campaign> campaign;

  Replica(std::shared_ptr<LeaseStore> store, std::string id, CampaignOptions o = quick())
      : node(std::move(id)) {
    CampaignCallbacks cb;
    cb.on_started_leading = [this](LeaderContext& ctx) {
      std::lock_guard lock(mu);
      tokens.push_back(ctx.fencing_token());
      ++started;
    };
    cb.on_stopped_leading = [this] { ++stopped; };
    campaign = std::make_unique<Campaign>(LeaderElector(std::move(store), fast(node)), "svc",
                                          std::move(cb), o);
  }
};

std::string holder(LeaseStore& store) {
  LockState s = store.inspect("svc", Deadline::after(1s));
  return s.holders.empty() ? std::string() : s.holders.front().node_id;
}

int leaders(const std::vector<std::unique_ptr<Replica>>& rs) {
  int n = 0;
  for (const auto& r : rs) n += r->campaign->is_leader() ? 1 : 0;
  return n;
}

TEST(Campaign, RefusesAnElectorWithoutAutoExtendOrFailOpenAndBadPeriods) {
  auto store = make_memory_store();
  ElectionOptions no_extend = fast("a");
  no_extend.auto_extend = false;
  EXPECT_THROW(Campaign(LeaderElector(store, no_extend), "svc", {}), InvalidArgument);
  ElectionOptions open = fast("a");
  open.on_backend_error = OnBackendError::fail_open;
  EXPECT_THROW(Campaign(LeaderElector(store, open), "svc", {}), InvalidArgument);
  EXPECT_THROW(Campaign(LeaderElector(store, fast("a")), "svc", {}, {.retry_period = 0ms}),
               InvalidArgument);
  EXPECT_THROW(Campaign(LeaderElector(store, fast("a")), "svc", {}, {.observe_interval = -1ms}),
               InvalidArgument);
  EXPECT_THROW(Campaign(LeaderElector(store, fast("a")), "bad name!", {}), InvalidArgument);
}

TEST(Campaign, ExactlyOneOfThreeLeadsAndAStandbyTakesOverWhenTheLeaderStops) {
  auto store = make_memory_store();
  std::vector<std::unique_ptr<Replica>> rs;
  for (const char* n : {"a", "b", "c"}) rs.push_back(std::make_unique<Replica>(store, n));
  for (auto& r : rs) r->campaign->start();
  ASSERT_TRUE(eventually([&] { return leaders(rs) == 1; }));
  std::this_thread::sleep_for(700ms);  // longer than the lease: renewed, still one leader
  ASSERT_EQ(leaders(rs), 1);
  Replica* first = nullptr;
  for (auto& r : rs)
    if (r->campaign->is_leader()) first = r.get();
  EXPECT_EQ(holder(*store), first->node) << "the store disagrees about who leads";
  const std::uint64_t token = first->campaign->term()->fencing_token;
  first->campaign->stop();  // release_on_cancel: released at once
  EXPECT_EQ(first->stopped.load(), first->started.load());
  EXPECT_FALSE(first->campaign->is_leader());
  ASSERT_TRUE(eventually([&] { return leaders(rs) == 1; }, 1000ms));
  Replica* second = nullptr;
  for (auto& r : rs)
    if (r->campaign->is_leader()) second = r.get();
  ASSERT_NE(second, first);
  EXPECT_GT(second->campaign->term()->fencing_token, token);
  EXPECT_EQ(holder(*store), second->node);
  for (auto& r : rs) r->campaign->stop();
  EXPECT_FALSE(store->inspect("svc", Deadline::after(1s)).held());
}

TEST(Campaign, ResignHandsOverAndTheResignerCampaignsAgainAfterwards) {
  auto store = make_memory_store();
  std::vector<std::unique_ptr<Replica>> rs;
  for (const char* n : {"a", "b"}) rs.push_back(std::make_unique<Replica>(store, n));
  for (auto& r : rs) r->campaign->start();
  ASSERT_TRUE(eventually([&] { return leaders(rs) == 1; }));
  Replica* first = rs[0]->campaign->is_leader() ? rs[0].get() : rs[1].get();
  Replica* other = first == rs[0].get() ? rs[1].get() : rs[0].get();
  EXPECT_FALSE(other->campaign->resign()) << "a standby has nothing to resign";
  ASSERT_TRUE(first->campaign->resign());
  ASSERT_TRUE(eventually([&] { return other->campaign->is_leader(); }, 1000ms));
  EXPECT_EQ(first->stopped.load(), 1);
  // The resigner is a standby again: it takes over when the new leader resigns.
  ASSERT_TRUE(other->campaign->resign());
  ASSERT_TRUE(eventually([&] { return first->campaign->is_leader(); }, 2000ms));
  EXPECT_EQ(first->campaign->terms(), 2u);
  for (auto& r : rs) r->campaign->stop();
}

TEST(Campaign, ALostLeaseFiresTheStopEndsTheTermAndTheCampaignGoesOn) {
  auto server = make_memory_store();
  auto store = std::make_shared<ScriptedStore>(server);
  std::atomic<bool> refuse{false};
  store->on_renew = [&](const Lease& l, Duration ttl, Deadline d, LeaseStore& inner) {
    if (refuse) return Renewal{LeaseStatus::lost, {}};
    return inner.renew(l, ttl, d);
  };
  std::atomic<int> stops{0};
  std::atomic<int> stopped{0};
  CampaignCallbacks cb;
  cb.on_started_leading = [&](LeaderContext& ctx) {
    std::stop_callback count(ctx.stop_token(), [&] { ++stops; });
    while (!ctx.stop_token().stop_requested()) std::this_thread::sleep_for(5ms);  // blocks
  };
  cb.on_stopped_leading = [&] { ++stopped; };
  Campaign c(LeaderElector(store, fast("a")), "svc", cb, quick());
  c.start();
  ASSERT_TRUE(eventually([&] { return c.is_leader(); }));
  refuse = true;
  ASSERT_TRUE(eventually([&] { return stopped.load() == 1; }));
  EXPECT_EQ(stops.load(), 1);
  refuse = false;
  ASSERT_TRUE(eventually([&] { return c.terms() == 2 && c.is_leader(); }));
  c.stop();
  EXPECT_EQ(stopped.load(), 2);
}

TEST(Campaign, WithoutReleaseOnCancelTheLeaseStaysUntilItExpiresOnTheStore) {
  auto store = make_memory_store();
  Replica r(store, "a", {.retry_period = 20ms, .release_on_cancel = false});
  r.campaign->start();
  ASSERT_TRUE(eventually([&] { return r.campaign->is_leader(); }));
  r.campaign->stop();
  EXPECT_EQ(r.stopped.load(), 1);
  EXPECT_EQ(holder(*store), "a") << "released although release_on_cancel = false";
  EXPECT_TRUE(eventually([&] { return holder(*store).empty(); }, 2000ms)) << "still renewed";
}

TEST(Campaign, ResignOnReturnStepsDownWhenTheCallbackReturns) {
  auto store = make_memory_store();
  Replica a(store, "a", {.retry_period = 20ms, .resign_on_return = true});
  Replica b(store, "b", {.retry_period = 20ms, .resign_on_return = true});
  a.campaign->start();
  ASSERT_TRUE(eventually([&] { return a.started.load() >= 1; }));
  b.campaign->start();
  ASSERT_TRUE(eventually([&] { return b.started.load() >= 1; }, 3000ms)) << "a never let go";
  a.campaign->stop();
  b.campaign->stop();
  EXPECT_EQ(a.started.load(), a.stopped.load());
  EXPECT_EQ(b.started.load(), b.stopped.load());
}

TEST(Campaign, ACallbackExceptionEndsTheTermReleasedAndIsRethrown) {
  auto store = make_memory_store();
  std::atomic<int> stopped{0};
  CampaignCallbacks cb;
  cb.on_started_leading = [](LeaderContext&) { throw std::runtime_error("boom"); };
  cb.on_stopped_leading = [&] { ++stopped; };
  Campaign c(LeaderElector(store, fast("a")), "svc", cb, quick());
  EXPECT_THROW(c.run({}), std::runtime_error);
  EXPECT_EQ(stopped.load(), 1);
  EXPECT_FALSE(store->inspect("svc", Deadline::after(1s)).held());
  c.start();  // the same error through start()/stop()
  ASSERT_TRUE(eventually([&] { return stopped.load() == 2; }));
  EXPECT_THROW(c.stop(), std::runtime_error);
  c.stop();  // reported once
}

TEST(Campaign, RetryableStoreFailuresAreReportedAndRetriedOthersEndTheRun) {
  auto server = make_memory_store();
  auto store = std::make_shared<ScriptedStore>(server);
  std::atomic<int> failures{0};
  std::atomic<ErrorCode> code{ErrorCode::unavailable};
  store->on_acquire = [&](const LeaseRequest& r, Deadline d, LeaseStore& inner) -> Acquired {
    if (failures.load() < 3) throw BackendError(code.load(), "scripted", "down");
    return inner.try_acquire(r, d);
  };
  CampaignCallbacks cb;
  cb.on_error = [&](const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::unavailable);
    ++failures;
  };
  Campaign c(LeaderElector(store, fast("a")), "svc", cb, quick());
  c.start();
  ASSERT_TRUE(eventually([&] { return c.is_leader(); }));
  EXPECT_EQ(failures.load(), 3);
  c.stop();
  failures = 0;
  code = ErrorCode::failed_precondition;
  std::stop_source never;
  std::future<void> done = c.run_async(never.get_token());
  ASSERT_EQ(done.wait_for(2s), std::future_status::ready);
  try {
    done.get();
    ADD_FAILURE() << "a failed_precondition did not end the campaign";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
  }
}

TEST(Campaign, GroupFormKeepsNLeadersEachInItsOwnSlot) {
  auto store = make_memory_store();
  std::vector<std::unique_ptr<Campaign>> cs;
  std::mutex mu;
  std::set<int> slots;
  for (const char* n : {"a", "b", "c"}) {
    GroupOptions g{
        .election = {.wait_time = 0s, .lease_time = 600ms, .auto_extend = true, .node_id = n},
        .max_leaders = 2};
    CampaignCallbacks cb;
    cb.on_started_leading = [&](LeaderContext& ctx) {
      std::lock_guard lock(mu);
      slots.insert(ctx.slot());
    };
    cs.push_back(std::make_unique<Campaign>(LeaderGroupElector(store, g), "svc", cb, quick()));
    cs.back()->start();
  }
  auto active = [&] {
    int n = 0;
    for (auto& c : cs) n += c->is_leader() ? 1 : 0;
    return n;
  };
  ASSERT_TRUE(eventually([&] { return active() == 2; }));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(active(), 2);
  EXPECT_EQ(store->inspect("svc", Deadline::after(1s)).holders.size(), 2u);
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(slots, (std::set<int>{0, 1}));
  }
  for (auto& c : cs)
    if (c->is_leader()) {
      c->stop();
      break;
    }
  ASSERT_TRUE(eventually([&] { return active() == 2; }, 1000ms)) << "the standby did not fill in";
  for (auto& c : cs) c->stop();
}

TEST(Campaign, OnNewLeaderSeesEachChangeOfHolder) {
  auto store = make_memory_store();
  std::mutex mu;
  std::vector<std::string> seen;
  CampaignCallbacks cb;
  cb.on_new_leader = [&](const LockState& s) {
    std::lock_guard lock(mu);
    seen.push_back(s.holders.empty() ? "-" : s.holders.front().node_id);
  };
  Campaign observer(LeaderElector(store, fast("o")), "svc", cb, quick());
  Replica a(store, "a");
  // `observer` campaigns on svc too; started last so that `a` leads first.
  a.campaign->start();
  ASSERT_TRUE(eventually([&] { return a.campaign->is_leader(); }));
  observer.start();
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mu);
    return !seen.empty() && seen.back() == "a";
  }));
  a.campaign->stop();
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mu);
    return seen.back() == "o";
  }));
  observer.stop();
}

TEST(ObserveLock, ReportsTheFirstSnapshotAndEveryChangeUntilTheCallbackSaysStop) {
  auto store = make_memory_store();
  EXPECT_THROW(
      observe_lock(*store, "svc", [](const LockState&) { return false; }, {}, {.interval = 0ms}),
      InvalidArgument);
  std::vector<std::size_t> sizes;
  std::stop_source stop;
  auto watching = std::async(std::launch::async, [&] {
    observe_lock(*store, "svc",
                 [&](const LockState& s) {
                   sizes.push_back(s.holders.size());
                   return sizes.size() < 3;
                 },
                 stop.get_token(), {.interval = 10ms});
  });
  LeaderElector e(store, fast("a"));
  std::this_thread::sleep_for(50ms);
  {
    auto held = e.acquire("svc");
    ASSERT_TRUE(held);
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(watching.wait_for(2s), std::future_status::ready);
  EXPECT_EQ(sizes, (std::vector<std::size_t>{0, 1, 0}));
  set_memory_store_unavailable(*store, true);
  EXPECT_THROW(observe_lock(*store, "svc", [](const LockState&) { return true; }, {}),
               BackendError);
  set_memory_store_unavailable(*store, false);
}

// The memory store with a watch that never notices anything: it waits out its deadline (or the
// stop) and returns the caller's snapshot, so only observe_lock's safety net re-reads.
class DeafWatcher final : public LeaseStore, public LockWatcher {
 public:
  explicit DeafWatcher(std::shared_ptr<LeaseStore> inner) : inner_(std::move(inner)) {}
  [[nodiscard]] std::string_view scheme() const override { return inner_->scheme(); }
  Capabilities capabilities() noexcept override { return {.watch = this}; }
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
  [[nodiscard]] LockState watch(std::string_view, const LockState& last_seen, Deadline deadline,
                                const std::stop_token& stop) override {
    ++watches;
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    cv.wait_until(lock, stop, deadline.at(), [] { return false; });
    return last_seen;
  }
  std::atomic<int> watches{0};

 private:
  std::shared_ptr<LeaseStore> inner_;
};

TEST(ObserveLock, AStoreThatWatchesIsWatchedAndTheRecheckCatchesWhatItsWatchMisses) {
  auto store = std::make_shared<DeafWatcher>(make_memory_store());
  ASSERT_EQ(lock_watcher(*store), store.get());
  EXPECT_THROW(
      observe_lock(*store, "svc", [](const LockState&) { return false; }, {}, {.recheck = 0ms}),
      InvalidArgument);
  std::vector<std::size_t> sizes;
  std::stop_source stop;
  auto watching = std::async(std::launch::async, [&] {
    observe_lock(*store, "svc",
                 [&](const LockState& s) {
                   sizes.push_back(s.holders.size());
                   return sizes.size() < 3;
                 },
                 stop.get_token(), {.interval = 10ms, .recheck = 50ms});
  });
  LeaderElector e(store, fast("a"));
  std::this_thread::sleep_for(100ms);
  {
    auto held = e.acquire("svc");
    ASSERT_TRUE(held);
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(watching.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(sizes, (std::vector<std::size_t>{0, 1, 0}));
  EXPECT_GT(store->watches.load(), 0);
  // A stop request ends a long watch.
  std::stop_source quit;
  auto quiet = std::async(std::launch::async, [&] {
    observe_lock(*store, "svc", [](const LockState&) { return true; }, quit.get_token(),
                 {.recheck = 3600s});
  });
  std::this_thread::sleep_for(50ms);
  quit.request_stop();
  EXPECT_EQ(quiet.wait_for(5s), std::future_status::ready);
}

// leader::open() wraps every store in a CheckedStore (and Metrics::instrument in another
// wrapper): lock_watcher looks through wrappers, so wrapping never turns a watch into a poll.
TEST(ObserveLock, AWrappedStoreIsWatchedThroughTheStoreItWraps) {
  auto deaf = std::make_shared<DeafWatcher>(make_memory_store());
  const auto checked = detail::checked(deaf);
  ASSERT_NE(checked.get(), static_cast<LeaseStore*>(deaf.get()));
  EXPECT_EQ(lock_watcher(*checked), deaf.get());
  EXPECT_EQ(&detail::unchecked(*checked), deaf.get());
  EXPECT_EQ(lock_watcher(*make_memory_store()), nullptr) << "memory has no watch: polled";
  std::stop_source stop;
  auto watching = std::async(std::launch::async, [&] {
    observe_lock(*checked, "svc", [](const LockState&) { return true; }, stop.get_token(),
                 {.interval = 10ms, .recheck = 50ms});
  });
  EXPECT_TRUE(eventually([&] { return deaf->watches.load() > 0; }));
  stop.request_stop();
  EXPECT_EQ(watching.wait_for(5s), std::future_status::ready);
}

// Campaign::on_new_leader follows the lock with observe_lock on the elector's store: watched.
TEST(Campaign, OnNewLeaderWatchesAStoreThatCanWatch) {
  auto deaf = std::make_shared<DeafWatcher>(make_memory_store());
  std::mutex mu;
  std::vector<std::string> seen;
  CampaignCallbacks cb;
  cb.on_new_leader = [&](const LockState& s) {
    std::lock_guard lock(mu);
    seen.push_back(s.holders.empty() ? "-" : s.holders.front().node_id);
  };
  CampaignOptions options = quick();
  options.observe_interval = 10ms;
  Campaign c(LeaderElector(deaf, fast("w")), "svc", cb, options);
  c.start();
  ASSERT_TRUE(eventually([&] { return c.is_leader(); }));
  // The deaf watch hears nothing (its safety net re-reads after 30 s): the first snapshot is
  // reported, then the observer waits in watch(), not in an inspect() poll.
  EXPECT_TRUE(eventually([&] { return deaf->watches.load() > 0; })) << "on_new_leader polled";
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(seen.size(), 1U);
  }
  const auto stopping = std::chrono::steady_clock::now();
  c.stop();  // a stop request ends the long watch
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, 5s);
}

}  // namespace
}  // namespace leader
