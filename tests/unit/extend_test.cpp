// Defect 1 of issue 10: extend() with auto_extend. The local deadline must come from the ttl
// actually sent in the request whose send time it uses, and renewals must not overtake each
// other. Judged by an observer on the memory store (the "server"), with one fake clock.

#include <gtest/gtest.h>

#include "scripted_store.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;
using testkit::eventually;
using testkit::Gate;
using testkit::ScriptedStore;

struct World {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<LeaseStore> server = make_memory_store({.clock = clock});
  std::shared_ptr<ScriptedStore> store = std::make_shared<ScriptedStore>(server);
  LeaderElector elector(ElectionOptions o) {
    return LeaderElector(store, std::move(o), {.clock = clock});
  }
};

ElectionOptions extending(Duration lease) {
  return {.wait_time = 0s, .lease_time = lease, .auto_extend = true};
}

BackendError down() { return BackendError(ErrorCode::unavailable, "scripted", "renewals fail"); }

TEST(Extend, LongerThanTheLeaseMakesLaterRenewalsRequestTheLongerTtl) {
  World w;
  std::atomic<bool> failing{false};
  w.store->on_renew = [&](const Lease& l, Duration ttl, Deadline d, LeaseStore& inner) {
    if (failing) throw down();
    return inner.renew(l, ttl, d);
  };
  auto e = w.elector(extending(10s));
  auto held = e.acquire("job");
  ASSERT_TRUE(held);
  auto& ctx = held.guard->context();
  w.clock->advance(1s);
  ASSERT_TRUE(ctx.extend(30s));
  // The first scheduled renewal after the extend asks for 30 s again, not lease_time.
  for (int i = 0; i < 200 && w.store->renew_ttls().size() < 2; ++i) {
    w.clock->advance(100ms);
    eventually([&] { return w.store->renew_ttls().size() >= 2; }, 5ms);
  }
  auto ttls = w.store->renew_ttls();
  ASSERT_GE(ttls.size(), 2u);
  EXPECT_EQ(ttls[0], 30s);
  EXPECT_EQ(ttls[1], 30s) << "a scheduled renewal shortened the lease extend() set";
  failing = true;
  auto race = testkit::step_until_takeover(*w.clock, *w.server, "job", ctx, 100ms, 60s);
  testkit::expect_stop_before_takeover(race, 6s - 200ms);  // margin: 30 s / 5
}

TEST(Extend, ShorterThanTheLeaseWaitsForTheRenewalInFlight) {
  World w;
  Gate reply;  // holds the reply of the first scheduled renewal after the server applied it
  std::atomic<int> calls{0};
  w.store->on_renew = [&](const Lease& l, Duration ttl, Deadline d, LeaseStore& inner) {
    int n = ++calls;
    if (n > 2) throw down();  // 1: the scheduled renewal, 2: the extend; later ones fail
    auto renewal = inner.renew(l, ttl, d);
    if (n == 1) reply.wait();
    return renewal;
  };
  auto e = w.elector(extending(10s));
  auto held = e.acquire("job");
  ASSERT_TRUE(held);
  auto& ctx = held.guard->context();
  w.clock->advance(4s);  // the renewal is due at 10 s / 3 +- 10 %
  ASSERT_TRUE(eventually([&] { return reply.waiting() == 1; }));
  w.clock->advance(1s);
  std::atomic<bool> extended{false};
  std::thread extender([&] { extended = ctx.extend(3s); });
  EXPECT_FALSE(eventually([&] { return calls.load() >= 2; }, 200ms))
      << "extend() reached the store while a renewal was in flight";
  reply.open();
  extender.join();
  EXPECT_TRUE(extended);
  auto race = testkit::step_until_takeover(*w.clock, *w.server, "job", ctx, 100ms, 30s);
  testkit::expect_stop_before_takeover(race, 600ms - 200ms);  // margin: 3 s / 5
}

TEST(Extend, AShorterExtendWithAnUnknownOutcomeBoundsTheDeadline) {
  World w;
  std::atomic<int> calls{0};
  w.store->on_renew = [&](const Lease& l, Duration ttl, Deadline d, LeaseStore& inner) -> Renewal {
    if (++calls > 1) throw down();
    (void)inner.renew(l, ttl, d);  // applied on the server, but the reply is lost
    throw BackendError(ErrorCode::deadline_exceeded, "scripted", "reply lost");
  };
  auto e = w.elector(extending(10s));
  auto held = e.acquire("job");
  ASSERT_TRUE(held);
  auto& ctx = held.guard->context();
  w.clock->advance(1s);
  const TimePoint sent = w.clock->now();
  EXPECT_THROW((void)ctx.extend(3s), BackendError);
  EXPECT_LE(ctx.deadline(), sent + 3s - 600ms);
  auto race = testkit::step_until_takeover(*w.clock, *w.server, "job", ctx, 100ms, 30s);
  testkit::expect_stop_before_takeover(race, 600ms - 200ms);
}

TEST(Extend, AGhostExtendLandingAfterALaterRenewalIsCovered) {
  World w;
  std::mutex mu;
  std::optional<Lease> ghost;  // the lost extend, applied by the test later
  std::atomic<int> calls{0};
  std::atomic<bool> failing{false};
  w.store->on_renew = [&](const Lease& l, Duration ttl, Deadline d, LeaseStore& inner) -> Renewal {
    if (++calls == 1) {
      std::lock_guard lock(mu);
      ghost = l;
      throw BackendError(ErrorCode::deadline_exceeded, "scripted", "still in the network");
    }
    if (failing) throw down();
    return inner.renew(l, ttl, d);
  };
  auto e = w.elector(extending(10s));
  auto held = e.acquire("job");
  ASSERT_TRUE(held);
  auto& ctx = held.guard->context();
  w.clock->advance(1s);
  EXPECT_THROW((void)ctx.extend(3s), BackendError);
  // A scheduled renewal is confirmed, then the lost extend reaches the server after it.
  for (int i = 0; i < 100 && calls.load() < 2; ++i) {
    w.clock->advance(100ms);
    eventually([&] { return calls.load() >= 2; }, 5ms);
  }
  ASSERT_GE(calls.load(), 2);
  failing = true;
  w.clock->advance(500ms);
  {
    std::lock_guard lock(mu);
    Lease late = *ghost;
    ASSERT_EQ(w.server->renew(late, 3s, Deadline::after(1s)).status, LeaseStatus::ok);
  }
  auto race = testkit::step_until_takeover(*w.clock, *w.server, "job", ctx, 100ms, 30s);
  testkit::expect_stop_before_takeover(race, 600ms - 200ms);
}

}  // namespace
}  // namespace leader
