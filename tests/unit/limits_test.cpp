// Defect 9 of issue 10 (core parts): duration bounds, one black-holed store cannot starve the
// renewals of another store's leases, and min_lease_time counted from the server's grant.

#include <gtest/gtest.h>

#include "scripted_store.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;
using testkit::Gate;
using testkit::ScriptedStore;

constexpr Duration kYear = std::chrono::hours(24 * 365);
constexpr Duration kTooLong = kYear + 1ms;

struct TooLong {
  const char* field;
  ElectionOptions options;
};

class DurationBound : public ::testing::TestWithParam<TooLong> {};

TEST_P(DurationBound, IsEnforcedWithTheFieldAndTheBoundNamed) {
  try {
    GetParam().options.validate();
    FAIL() << "accepted " << GetParam().field << " beyond 365 days";
  } catch (const InvalidArgument& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(GetParam().field), std::string::npos) << what;
    EXPECT_NE(what.find("365 days"), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Options, DurationBound,
                         ::testing::Values(TooLong{"wait_time", {.wait_time = kTooLong}},
                                           TooLong{"lease_time", {.lease_time = kTooLong}},
                                           TooLong{"lease_time", {.lease_time = Duration::max()}},
                                           TooLong{"min_lease_time", {.min_lease_time = kTooLong}},
                                           TooLong{"safety_margin", {.safety_margin = kTooLong}},
                                           TooLong{"call_timeout", {.call_timeout = kTooLong}}));

TEST(DurationBound, CoversGroupAndStrategicOptionsAndExtend) {
  EXPECT_THROW((GroupOptions{.election = {.wait_time = kTooLong}}.validate()), InvalidArgument);
  EXPECT_THROW((GroupOptions{.election = {.call_timeout = Duration::max()}}.validate()),
               InvalidArgument);
  EXPECT_NO_THROW((GroupOptions{.election = {.wait_time = kYear, .lease_time = kYear}}.validate()));
  auto store = make_memory_store();
  EXPECT_THROW(StrategicElector(store, "g", strategies::fifo(), {.candidate_ttl = kTooLong}),
               InvalidArgument);
  LeaderElector e(store, {.wait_time = 0s, .lease_time = 10s});
  auto held = e.acquire("job");
  ASSERT_TRUE(held);
  EXPECT_THROW((void)held.guard->context().extend(Duration::max()), InvalidArgument);
  EXPECT_TRUE(held.guard->context().extend(kYear));
}

TEST(DurationBound, DeadlineArithmeticSaturates) {
  const TimePoint t = std::chrono::steady_clock::now();
  EXPECT_EQ(saturating_add(t, Duration::max()), TimePoint::max());
  EXPECT_EQ(saturating_add(t, Duration::min()), TimePoint::min());
  EXPECT_EQ(saturating_add(TimePoint::max() - 1h, 2h), TimePoint::max());
  EXPECT_EQ(saturating_add(t, 5s), t + 5s);
  EXPECT_FALSE(Deadline::after(Duration::max()).expired());
}

// Renewals of this store hang until the test ends (a black-holed server).
struct BlackHole {
  Gate gate;
  std::shared_ptr<ScriptedStore> store;
  explicit BlackHole(std::shared_ptr<Clock> clock)
      : store(std::make_shared<ScriptedStore>(make_memory_store({.clock = std::move(clock)}))) {
    store->on_renew = [this](const Lease& l, Duration ttl, Deadline d, LeaseStore& inner) {
      gate.wait();
      return inner.renew(l, ttl, d);
    };
  }
};

struct OpenOnExit {
  Gate& gate;
  ~OpenOnExit() { gate.open(); }
};

TEST(RenewalWorkers, ABlackHoledStoreDoesNotStarveAnotherStoresLeases) {
  auto clock = std::make_shared<FakeClock>();
  BlackHole hole(clock);
  auto healthy = make_memory_store({.clock = clock});
  const ElectionOptions o{.wait_time = 0s, .lease_time = 30s, .auto_extend = true};
  LeaderElector on_hole(hole.store, o, {.clock = clock});
  LeaderElector on_healthy(healthy, o, {.clock = clock});
  std::vector<LeaseGuard> stuck;
  for (const char* name : {"a", "b", "c", "d"}) {
    auto acq = on_hole.acquire(name);
    ASSERT_TRUE(acq);
    stuck.push_back(std::move(*acq.guard));
  }
  auto acq = on_healthy.acquire("job");
  ASSERT_TRUE(acq);
  OpenOnExit open{hole.gate};  // destroyed first: lets the hung calls end before the guards
  auto& ctx = acq.guard->context();
  for (int i = 0; i < 60; ++i) {  // 60 s: two leases' worth
    clock->advance(1s);
    ASSERT_TRUE(testkit::eventually([&] { return ctx.deadline() > clock->now() + 13s; }))
        << "the healthy lease was not renewed at " << i + 1 << " s";
    EXPECT_FALSE(testkit::observer_takes_over(*healthy, "job"));
  }
  EXPECT_TRUE(ctx.still_leader());
  EXPECT_GE(hole.gate.waiting(), 1);
  for (auto& g : stuck) EXPECT_TRUE(g.context().stop_token().stop_requested());
}

TEST(MinLeaseTime, IsHeldForItsValueAfterTheServersGrant) {
  auto clock = std::make_shared<FakeClock>();
  auto server = make_memory_store({.clock = clock});
  auto store = std::make_shared<ScriptedStore>(server);
  TimePoint granted_at{};
  store->on_acquire = [&](const LeaseRequest& r, Deadline d, LeaseStore& inner) {
    clock->advance(300ms);  // the request travels; the server grants at its end
    granted_at = clock->now();
    return inner.try_acquire(r, d);
  };
  LeaderElector e(store, {.wait_time = 0s, .lease_time = 30s, .min_lease_time = 10s},
                  {.clock = clock});
  EXPECT_TRUE(e.run_if_leader("job", [] {}));
  std::optional<TimePoint> taken;
  for (int i = 0; i < 400 && !taken; ++i) {
    if (testkit::observer_takes_over(*server, "job")) taken = clock->now();
    clock->advance(50ms);
  }
  ASSERT_TRUE(taken);
  EXPECT_GE(*taken - granted_at, 10s) << "min_lease_time was not held after the grant";
  EXPECT_LE(*taken - granted_at, 10s + 50ms);
}

}  // namespace
}  // namespace leader
