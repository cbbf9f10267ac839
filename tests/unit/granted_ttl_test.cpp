// Defect 4 of issue 10 (core part): a store that grants a shorter ttl than asked (a ZooKeeper
// session capped by the server). An explicit safety margin is never shrunk; a grant it does not
// fit is refused; the grant is reported in LeaseInfo::granted_ttl.

#include <gtest/gtest.h>

#include "scripted_store.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;
using testkit::ScriptedStore;

struct CappedWorld {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<LeaseStore> server = make_memory_store({.clock = clock});
  std::shared_ptr<ScriptedStore> store = std::make_shared<ScriptedStore>(server);
  explicit CappedWorld(Duration acquire_cap, Duration renew_cap = Duration::max()) {
    store->on_acquire = [acquire_cap](const LeaseRequest& r, Deadline d, LeaseStore& inner) {
      LeaseRequest capped = r;
      capped.ttl = std::min(r.ttl, acquire_cap);
      return inner.try_acquire(capped, d);
    };
    store->on_renew = [renew_cap](const Lease& l, Duration ttl, Deadline d, LeaseStore& inner) {
      return inner.renew(l, std::min(ttl, renew_cap), d);
    };
  }
  LeaderElector elector(ElectionOptions o) { return LeaderElector(store, o, {.clock = clock}); }
};

TEST(GrantedTtl, IsReportedInTheLeaseInfo) {
  CappedWorld w(5s);
  auto e = w.elector({.wait_time = 0s, .lease_time = 30s});
  auto held = e.acquire("job");
  ASSERT_TRUE(held);
  EXPECT_EQ(held.guard->info().lease_time, 30s);
  EXPECT_EQ(held.guard->info().granted_ttl, 5s);
  CappedWorld full(60s);
  auto f = full.elector({.wait_time = 0s, .lease_time = 30s});
  auto h = f.acquire("job");
  ASSERT_TRUE(h);
  EXPECT_EQ(h.guard->info().granted_ttl, 30s);
}

TEST(GrantedTtl, ShorterThanAnExplicitMarginIsRefusedAndTheLeaseReleased) {
  CappedWorld w(5s);
  auto e = w.elector({.wait_time = 0s, .lease_time = 30s, .safety_margin = 6s});
  try {
    auto held = e.acquire("job");
    FAIL() << "a grant of 5 s was accepted with a safety margin of 6 s";
  } catch (const BackendError& err) {
    EXPECT_EQ(err.code(), ErrorCode::failed_precondition);
    EXPECT_NE(dynamic_cast<const GrantTooShort*>(&err), nullptr)
        << "not typed as GrantTooShort: " << err.what();
    std::string what = err.what();
    for (const char* part : {"'job'", "30s", "5s", "6s"})
      EXPECT_NE(what.find(part), std::string::npos) << part << " missing in: " << what;
  }
  EXPECT_TRUE(testkit::observer_takes_over(*w.server, "job")) << "the refused lease was kept";
}

TEST(GrantedTtl, AnExplicitMarginThatLeavesNoRoomForRenewalsIsRefused) {
  CappedWorld w(5s);  // auto_extend renews at 5 s / 3: a 3 s margin is more than half of 5 s
  auto e =
      w.elector({.wait_time = 0s, .lease_time = 30s, .auto_extend = true, .safety_margin = 3s});
  try {
    auto held = e.acquire("job");
    FAIL() << "accepted";
  } catch (const BackendError& err) {
    EXPECT_EQ(err.code(), ErrorCode::failed_precondition);
  }
  EXPECT_TRUE(testkit::observer_takes_over(*w.server, "job"));
}

TEST(GrantedTtl, AnExplicitMarginIsNeverShrunk) {
  CappedWorld w(5s);
  auto e = w.elector({.wait_time = 0s, .lease_time = 30s, .safety_margin = 2s});
  auto held = e.acquire("job");
  ASSERT_TRUE(held);
  auto& ctx = held.guard->context();
  EXPECT_EQ(ctx.deadline() - held.guard->info().acquired_at, 3s);  // 5 s - 2 s
  auto race = testkit::step_until_takeover(*w.clock, *w.server, "job", ctx, 100ms, 30s);
  testkit::expect_stop_before_takeover(race, 2s - 200ms);
}

TEST(GrantedTtl, TheDefaultMarginAndRenewalsFollowTheGrant) {
  CappedWorld w(5s, 5s);
  auto e = w.elector({.wait_time = 0s, .lease_time = 30s, .auto_extend = true});
  auto held = e.acquire("job");
  ASSERT_TRUE(held);
  auto& ctx = held.guard->context();
  EXPECT_EQ(ctx.deadline() - held.guard->info().acquired_at, 4s);  // 5 s - 5 s / 5
  for (int i = 0; i < 20; ++i) {  // 20 s: renewals every 5 s / 3 keep the 5 s grant alive
    w.clock->advance(500ms);
    ASSERT_TRUE(testkit::eventually([&] { return ctx.deadline() > w.clock->now() + 2s; }))
        << "renewal did not keep up at step " << i;
    EXPECT_FALSE(testkit::observer_takes_over(*w.server, "job"));
  }
  EXPECT_TRUE(ctx.still_leader());
}

TEST(GrantedTtl, ARenewalGrantedLessThanAnExplicitMarginStopsTheWork) {
  CappedWorld w(60s, 5s);  // the acquire gets 30 s; renewals only 5 s
  auto e =
      w.elector({.wait_time = 0s, .lease_time = 30s, .auto_extend = true, .safety_margin = 6s});
  auto held = e.acquire("job");
  ASSERT_TRUE(held);
  auto& ctx = held.guard->context();
  try {
    (void)ctx.extend(30s);
    FAIL() << "a renewal granted 5 s was accepted with a safety margin of 6 s";
  } catch (const BackendError& err) {
    EXPECT_EQ(err.code(), ErrorCode::failed_precondition);
  }
  EXPECT_TRUE(ctx.stop_token().stop_requested());
  EXPECT_FALSE(ctx.still_leader());
}

TEST(GrantedTtl, ExtendRefusesATtlTheExplicitMarginDoesNotFit) {
  CappedWorld w(60s);
  auto e = w.elector({.wait_time = 0s, .lease_time = 30s, .safety_margin = 6s});
  auto held = e.acquire("job");
  ASSERT_TRUE(held);
  EXPECT_THROW((void)held.guard->context().extend(6s), InvalidArgument);
  EXPECT_TRUE(held.guard->context().still_leader());
  EXPECT_TRUE(w.store->renew_ttls().empty()) << "the refused extend reached the store";
}

}  // namespace
}  // namespace leader
