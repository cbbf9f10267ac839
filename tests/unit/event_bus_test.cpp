// The event bus: ordering, drops under a slow listener, exception isolation, unsubscribe during
// delivery, re-entrant listeners, and the leadership state watch (memory store, fake clock).

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "events/lease_publishing.hpp"  // the engine's lease events (src/core, internal)
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

// Collects the events one subscription delivers.
struct Collected {
  std::mutex mu;
  std::vector<ElectionEvent> events;
  void add(const ElectionEvent& e) {
    std::lock_guard l(mu);
    events.push_back(e);
  }
  std::vector<std::string> kinds() {
    std::lock_guard l(mu);
    std::vector<std::string> out;
    for (const auto& e : events) out.push_back(std::string(to_string(e.kind)) + " " + e.lock);
    return out;
  }
  std::size_t size() {
    std::lock_guard l(mu);
    return events.size();
  }
};

struct World {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<LeaseStore> store = make_memory_store({.clock = clock});
  ElectorHooks hooks() { return {.clock = clock, .seed = 7}; }
  LeaderElector elector(ElectionOptions o = {.wait_time = 0s, .lease_time = 10s}) {
    return LeaderElector(store, std::move(o), hooks());
  }
};

TEST(EventBus, EverySubscriberSeesTheEventsInPublicationOrder) {
  World w;
  auto e = w.elector();
  Collected a, b;
  auto sa = e.events().subscribe([&](const ElectionEvent& ev) { a.add(ev); });
  auto sb = e.events().subscribe([&](const ElectionEvent& ev) { b.add(ev); });
  EXPECT_TRUE(e.run_if_leader("x", [] {}));
  auto held = e.acquire("y");
  EXPECT_FALSE(e.run_if_leader("y", [] {}));
  EXPECT_THROW(e.run_if_leader("z", [] { throw std::runtime_error("boom"); }), std::runtime_error);
  std::vector<std::string> expected{"elected x", "released x", "elected y",
                                    "skipped y", "elected z",  "released z"};
  ASSERT_TRUE(sa.wait_idle(5s));
  ASSERT_TRUE(sb.wait_idle(5s));
  EXPECT_EQ(a.kinds(), expected);
  EXPECT_EQ(b.kinds(), expected);
  std::lock_guard l(a.mu);
  for (std::size_t i = 1; i < a.events.size(); ++i)
    EXPECT_LT(a.events[i - 1].sequence, a.events[i].sequence);
  EXPECT_EQ(a.events[1].outcome, LeaseOutcome::completed);
  EXPECT_EQ(a.events[3].skip_reason, SkipReason::contention);
  EXPECT_EQ(a.events[5].outcome, LeaseOutcome::failed);
  EXPECT_EQ(a.events[5].detail, "boom");
  EXPECT_EQ(a.events[0].lease.fencing_token, a.events[1].lease.fencing_token);
}

TEST(EventBus, ASlowListenerDropsAndCountsWithoutDelayingElections) {
  World w;
  auto e = w.elector();
  std::promise<void> release_listener;
  std::shared_future<void> gate = release_listener.get_future().share();
  std::atomic<int> calls{0};
  auto slow = e.events().subscribe(
      [&](const ElectionEvent&) {
        if (calls.fetch_add(1) == 0) gate.wait();
      },
      {.queue_capacity = 2});
  Collected fast;
  auto quick = e.events().subscribe([&](const ElectionEvent& ev) { fast.add(ev); });
  EXPECT_TRUE(e.run_if_leader("job", [] {}));  // elected + released: the first one blocks
  ASSERT_TRUE(eventually([&] { return calls.load() == 1; }));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(e.run_if_leader("job", [] {}));  // 8 more events
  // In flight: 1 (blocked); queued: 2 (the capacity); dropped: the other 7.
  EXPECT_EQ(slow.dropped(), 7u);
  ASSERT_TRUE(quick.wait_idle(5s));
  EXPECT_EQ(fast.size(), 10u);
  EXPECT_EQ(quick.dropped(), 0u);
  release_listener.set_value();
  ASSERT_TRUE(slow.wait_idle(5s));
  EXPECT_EQ(slow.delivered(), 3u);
}

TEST(EventBus, ListenerExceptionsAreIsolatedAndCounted) {
  World w;
  auto e = w.elector();
  auto throwing =
      e.events().subscribe([](const ElectionEvent&) { throw std::runtime_error("listener"); });
  Collected ok;
  auto fine = e.events().subscribe([&](const ElectionEvent& ev) { ok.add(ev); });
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(e.run_if_leader("job", [] {}));
  ASSERT_TRUE(throwing.wait_idle(5s));
  ASSERT_TRUE(fine.wait_idle(5s));
  EXPECT_EQ(throwing.failures(), 6u);
  EXPECT_EQ(throwing.delivered(), 6u);
  EXPECT_EQ(ok.size(), 6u);
  EXPECT_EQ(fine.failures(), 0u);
}

TEST(EventBus, CountersStayReadableAfterTheSubscriptionEnded) {
  EventBus bus;
  SubscriptionCounters counters;
  EXPECT_EQ(counters.dropped(), 0u);  // a default one reads 0
  EXPECT_FALSE(counters.active());
  {
    auto sub = bus.subscribe([](const ElectionEvent&) { throw std::runtime_error("listener"); });
    counters = sub.counters();
    EXPECT_TRUE(counters.active());
    bus.publish({.kind = EventKind::renewed, .lock = "c"});
    ASSERT_TRUE(sub.wait_idle(5s));
  }
  EXPECT_FALSE(counters.active());
  EXPECT_EQ(counters.delivered(), 1u);
  EXPECT_EQ(counters.failures(), 1u);
  EXPECT_EQ(counters.dropped(), 0u);
}

TEST(EventBus, AListenersCapturesAreReleasedWhenItsSubscriptionEnds) {
  EventBus bus;
  auto captured = std::make_shared<int>(1);
  std::weak_ptr<int> watch = captured;
  auto sub = bus.subscribe([captured](const ElectionEvent&) {});
  captured.reset();
  const SubscriptionCounters counters = sub.counters();  // keeps the subscriber object alive
  sub.unsubscribe();
  EXPECT_TRUE(eventually([&] { return watch.expired(); }));  // no cycle through a capture
  EXPECT_FALSE(counters.active());
}

TEST(EventBus, AListenerMayUnsubscribeItselfDuringDelivery) {
  World w;
  auto e = w.elector();
  std::atomic<int> calls{0};
  Subscription self;
  std::promise<void> ready;
  std::shared_future<void> go = ready.get_future().share();
  self = e.events().subscribe([&](const ElectionEvent&) {
    go.wait();
    ++calls;
    self.unsubscribe();
  });
  ready.set_value();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(e.run_if_leader("job", [] {}));
  ASSERT_TRUE(eventually([&] { return !self.active(); }));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(e.events().subscribers(), 0u);
}

TEST(EventBus, UnsubscribeFromAnotherThreadWaitsForTheCallbackInProgress) {
  World w;
  auto e = w.elector();
  std::atomic<bool> inside{false}, done{false};
  auto sub = e.events().subscribe([&](const ElectionEvent&) {
    inside = true;
    std::this_thread::sleep_for(30ms);
    done = true;
  });
  EXPECT_TRUE(e.run_if_leader("job", [] {}));
  ASSERT_TRUE(eventually([&] { return inside.load(); }));
  sub.unsubscribe();
  EXPECT_TRUE(done.load());
  EXPECT_FALSE(sub.active());
}

TEST(EventBus, AListenerMayCallBackIntoTheElectorWithoutDeadlock) {
  World w;
  auto e = w.elector();
  std::promise<bool> nested;
  std::atomic<bool> once{false};
  auto sub = e.events().subscribe([&](const ElectionEvent& ev) {
    if (ev.kind != EventKind::elected || ev.lock != "outer" || once.exchange(true)) return;
    // The outer lease is held while this runs: another lock can be elected, the state read.
    bool ran = e.run_if_leader("inner", [] {});
    auto inner_sub = e.events().subscribe([](const ElectionEvent&) {});
    nested.set_value(ran && e.leadership("outer").version > 0);
  });
  auto result = nested.get_future();
  EXPECT_TRUE(
      e.run_if_leader("outer", [&] { EXPECT_EQ(result.wait_for(5s), std::future_status::ready); }));
  EXPECT_TRUE(result.get());
}

TEST(LeadershipState, FollowsAcquireRenewAndRelease) {
  World w;
  auto e = w.elector({.wait_time = 0s, .lease_time = 30s, .auto_extend = true});
  EXPECT_FALSE(e.leadership("job").held);
  EXPECT_EQ(e.leadership("job").version, 0u);
  std::vector<LeadershipState> seen;
  std::mutex mu;
  auto watch = e.events().watch_state([&](const LeadershipState& s) {
    std::lock_guard l(mu);
    seen.push_back(s);
  });
  auto held = e.acquire("job");
  ASSERT_TRUE(held);
  LeadershipState s = e.leadership("job");
  EXPECT_TRUE(s.held);
  EXPECT_EQ(s.holds, 1);
  EXPECT_EQ(s.fencing_token, held.guard->info().fencing_token);
  EXPECT_EQ(s.deadline, held.guard->context().deadline());
  const auto v = s.version;
  w.clock->advance(11s);  // a renewal is due
  ASSERT_TRUE(eventually([&] { return e.leadership("job").version > v; }));
  EXPECT_EQ(e.leadership("job").deadline, held.guard->context().deadline());
  EXPECT_TRUE(e.leadership("job").held);
  held.guard->release();
  EXPECT_FALSE(e.leadership("job").held);
  ASSERT_TRUE(watch.wait_idle(5s));
  std::lock_guard l(mu);
  ASSERT_GE(seen.size(), 3u);
  EXPECT_TRUE(seen.front().held);
  EXPECT_FALSE(seen.back().held);
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_LT(seen[i - 1].version, seen[i].version);
}

TEST(LeadershipState, ExpiryIsALostEventAndEndsAsExpired) {
  World w;
  auto e = w.elector();  // no auto_extend: the local deadline passes
  Collected c;
  auto sub = e.events().subscribe([&](const ElectionEvent& ev) { c.add(ev); });
  auto held = e.acquire("job");
  ASSERT_TRUE(held);
  const auto version = e.leadership("job").version;
  auto waiter = std::async(std::launch::async, [&] {
    return e.events().wait_state_change("job", version, std::stop_token{});
  });
  w.clock->advance(9s);  // past 10 s - 2 s margin
  ASSERT_EQ(waiter.wait_for(5s), std::future_status::ready);
  auto changed = waiter.get();
  ASSERT_TRUE(changed);
  EXPECT_FALSE(changed->held);
  held.guard->release();
  ASSERT_TRUE(sub.wait_idle(5s));
  EXPECT_EQ(c.kinds(), (std::vector<std::string>{"elected job", "lost job", "released job"}));
  std::lock_guard l(c.mu);
  EXPECT_EQ(c.events[1].outcome, LeaseOutcome::expired);
  EXPECT_EQ(c.events[2].outcome, LeaseOutcome::expired);
  EXPECT_FALSE(c.events[2].state.has_value());  // the state already changed at the loss
}

TEST(LeadershipState, WaitStateChangeReturnsEmptyWhenStopped) {
  EventBus bus;
  std::stop_source stop;
  auto waiter = std::async(std::launch::async,
                           [&] { return bus.wait_state_change("job", 0, stop.get_token()); });
  std::this_thread::sleep_for(5ms);
  stop.request_stop();
  EXPECT_FALSE(waiter.get().has_value());
}

TEST(LeadershipState, OneBusSeesSeveralElectorsAndNotifiesOnce) {
  World w;
  auto bus = std::make_shared<EventBus>();
  ElectorHooks hooks{.clock = w.clock, .events = bus};
  LeaderElector a(w.store, {.wait_time = 0s, .lease_time = 10s}, hooks);
  LeaderGroupElector g(w.store,
                       {.election = {.wait_time = 0s, .lease_time = 10s}, .max_leaders = 2}, hooks);
  std::atomic<int> fired{0};
  LeadershipState got;
  bus->notify_state_change("group", 0, [&](const LeadershipState& s) {
    got = s;
    ++fired;
  });
  auto one = g.acquire("group");
  auto two = g.acquire("group");
  ASSERT_TRUE(one && two);
  EXPECT_EQ(fired.load(), 1);
  EXPECT_EQ(got.holds, 1);
  EXPECT_EQ(bus->state("group").holds, 2);
  EXPECT_TRUE(a.run_if_leader("single", [] {}));
  EXPECT_EQ(bus->states().size(), 2u);
  one.guard->release();
  EXPECT_TRUE(bus->state("group").held);
  two.guard->release();
  EXPECT_FALSE(bus->state("group").held);
  auto id = bus->notify_state_change("group", bus->state("group").version, [](auto&) {});
  EXPECT_TRUE(bus->cancel_state_notification(id));
}

// publish_leases: a batch of lease events under one lock of the bus, each as publish_lease
// would: in order for subscribers, each lock's own state, a pending notification fired once with
// its lock's state, a blocked wait_state_change woken; states() ordered by name.
TEST(LeadershipState, ABatchPublicationUpdatesEachLockInOrder) {
  EventBus bus;
  Collected c;
  auto sub = bus.subscribe([&](const ElectionEvent& ev) { c.add(ev); });
  const std::vector<std::string> names{"b", "a", "c"};
  std::vector<LeaseInfo> infos;
  for (std::size_t i = 0; i < names.size(); ++i)
    infos.push_back({.lock = names[i], .node_id = "n", .fencing_token = 10 + i});
  const auto make = [](const void* context) { return *static_cast<const ElectionEvent*>(context); };
  std::vector<ElectionEvent> elected;
  std::vector<ElectionEvent> events;
  for (const auto& info : infos) {
    elected.push_back({.kind = EventKind::elected, .lock = info.lock, .lease = info});
    events.push_back({.kind = EventKind::renewed, .lock = info.lock, .lease = info});
  }
  const TimePoint t0{std::chrono::seconds(100)};
  for (std::size_t i = 0; i < infos.size(); ++i)
    detail::LeasePublishing::publish_lease(bus, EventKind::elected, infos[i], t0,
                                           {&elected[i], make});
  std::atomic<int> fired{0};
  LeadershipState got;
  bus.notify_state_change("c", bus.state("c").version, [&](const LeadershipState& s) {
    got = s;
    ++fired;
  });
  const std::uint64_t a_version = bus.state("a").version;
  std::stop_source give_up;  // so a failed check does not leave the waiter blocked
  auto waiter = std::async(std::launch::async, [&] {
    return bus.wait_state_change("a", a_version, give_up.get_token());
  });
  std::vector<detail::LeasePublishing::LeasePublication> items;
  for (std::size_t i = 0; i < infos.size(); ++i)
    items.push_back({&infos[i], t0 + std::chrono::seconds(i + 1), {&events[i], make}});
  detail::LeasePublishing::publish_leases(bus, EventKind::renewed, items);
  const bool woken = waiter.wait_for(5s) == std::future_status::ready;
  give_up.request_stop();
  ASSERT_TRUE(woken) << "wait_state_change was not woken";
  const auto a = waiter.get();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->deadline, t0 + 2s);
  EXPECT_EQ(fired.load(), 1);
  EXPECT_EQ(got.lock, "c");
  EXPECT_EQ(got.deadline, t0 + 3s);
  EXPECT_EQ(bus.state("b").deadline, t0 + 1s);
  EXPECT_EQ(bus.state("b").fencing_token, 10U);
  ASSERT_TRUE(sub.wait_idle(5s));
  EXPECT_EQ(c.kinds(), (std::vector<std::string>{"elected b", "elected a", "elected c", "renewed b",
                                                 "renewed a", "renewed c"}));
  std::vector<std::string> order;
  for (const auto& s : bus.states()) order.push_back(s.lock);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b", "c"}));
}

TEST(History, ErrorTextHidesSecretsAndIsTruncated) {
  std::string text = sanitize_error_text(
      "connect to postgres://app:hunter2@db:5432/x?sslpassword=s3cret failed; password=abc");
  EXPECT_EQ(text.find("hunter2"), std::string::npos) << text;
  EXPECT_EQ(text.find("s3cret"), std::string::npos) << text;
  EXPECT_EQ(text.find("abc"), std::string::npos) << text;
  EXPECT_NE(text.find("postgres://***@db:5432"), std::string::npos) << text;
  std::string long_text(5000, 'x');
  EXPECT_EQ(sanitize_error_text(long_text, 100).size(), 100u);
  EXPECT_EQ(sanitize_error_text("\xc3\xa9\xc3\xa9\xc3\xa9", 5), "\xc3\xa9...");
}

}  // namespace
}  // namespace leader
