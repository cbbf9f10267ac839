// The Scheduler on a fake clock and the memory store: several replicas (one Scheduler each) with
// skewed wall clocks run each instant exactly once; busy, late and failing firings; lost leases,
// stop(), introspection, group and strategic electors; option checks.

#include "scheduler_world.hpp"

namespace leader::test {
namespace {

TEST(Scheduler, FixedRateRunsEachInstantOnceAcrossSkewedReplicas) {
  World w;
  // Replica 1 is 1.5 s ahead of replica 0; each job finishes long before the slow timer fires.
  auto& a = w.replica(Duration{0}, {});
  auto& b = w.replica(1500ms, {});
  for (auto* r : {&a, &b}) r->add({.name = "report", .trigger = Trigger::fixed_rate(10s)});
  w.start();
  w.run_for(100s, 250ms);
  auto runs = w.runs_per_instant("report");
  ASSERT_GE(runs.size(), 9u);
  for (const auto& [instant, n] : runs) EXPECT_EQ(n, 1) << "instant " << instant;
  EXPECT_GT(a.count(FiringOutcome::ran_elsewhere) + b.count(FiringOutcome::ran_elsewhere), 8);
  auto tokens = w.tokens("report");
  EXPECT_TRUE(std::is_sorted(tokens.begin(), tokens.end()));
  EXPECT_EQ(std::adjacent_find(tokens.begin(), tokens.end()), tokens.end());
}

TEST(Scheduler, WithoutTheSkewAllowanceAFastJobIsRepeatedBySlowReplicas) {
  // The control of the test above: same clocks, but the scheduler is told the clocks agree and
  // the window is short, so the fast replica's hold ends before the slow replica's timer fires.
  World w;
  SchedulerOptions o{.max_clock_skew = Duration{0}, .misfire_threshold = 500ms};
  auto& a = w.replica(Duration{0}, o);
  auto& b = w.replica(1500ms, o);
  for (auto* r : {&a, &b}) r->add({.name = "report", .trigger = Trigger::fixed_rate(10s)});
  w.start();
  w.run_for(60s, 250ms, true, 10ms);  // slower pace: the fast replica's release must land in time
  int doubles = 0;
  for (const auto& [instant, n] : w.runs_per_instant("report")) doubles += n > 1 ? 1 : 0;
  EXPECT_GE(doubles, 3);
}

TEST(Scheduler, CronWithSecondsInBerlinRunsEachInstantOnce) {
  World w(utc_wall(2024, 3, 31, 0, 59, 0));  // across the spring gap (01:00 UTC)
  auto& a = w.replica(Duration{0}, {});
  auto& b = w.replica(-1200ms, {});
  auto& c = w.replica(700ms, {});
  for (auto* r : {&a, &b, &c})
    r->add({.name = "berlin", .trigger = Trigger::cron("*/15 * * * * *", "Europe/Berlin")});
  w.start();
  w.run_for(120s, 250ms);
  auto runs = w.runs_per_instant("berlin");
  ASSERT_GE(runs.size(), 7u);
  for (const auto& [instant, n] : runs) EXPECT_EQ(n, 1) << "instant " << instant;
}

TEST(Scheduler, TaskExceptionsGoToListenersAndTheSchedulerContinues) {
  World w;
  auto& a = w.replica(Duration{0}, {});
  std::atomic<int> calls{0};
  a.add({.name = "flaky", .trigger = Trigger::fixed_rate(10s)}, [&](LeaderContext&) {
    if (calls.fetch_add(1) % 2 == 0) throw std::runtime_error("disk full");
  });
  a.add({.name = "steady", .trigger = Trigger::fixed_rate(10s)});
  w.start();
  w.run_for(60s, 250ms);
  EXPECT_GE(a.count(FiringOutcome::failed), 2);
  EXPECT_GE(a.count(FiringOutcome::ran), 6);  // both tasks kept firing
  auto status = a.scheduler->task("flaky");
  ASSERT_TRUE(status);
  EXPECT_GE(status->failures, 2u);
  EXPECT_GE(status->runs, 5u);
  bool saw_text = false;
  for (const auto& r : a.records())
    saw_text |=
        r.outcome == FiringOutcome::failed && r.detail.find("disk full") != std::string::npos;
  EXPECT_TRUE(saw_text);
}

TEST(Scheduler, AFiringNeverOverlapsItsPreviousOneAndRunOnceCatchesUp) {
  World w;
  auto& a = w.replica(Duration{0}, {});
  std::atomic<bool> release{false};
  std::atomic<int> running{0}, max_running{0}, calls{0};
  auto slow = [&](LeaderContext&) {
    int now = running.fetch_add(1) + 1;
    max_running = std::max(max_running.load(), now);
    if (calls.fetch_add(1) == 0)
      while (!release.load()) std::this_thread::sleep_for(1ms);
    running.fetch_sub(1);
  };
  a.add({.name = "slow", .trigger = Trigger::fixed_rate(10s), .misfire = MisfirePolicy::run_once},
        slow);
  w.start();
  w.run_for(25s, 250ms, false);  // the first firing blocks: the next ones find it running
  EXPECT_GE(a.count(FiringOutcome::skipped_busy), 1);
  release = true;
  ASSERT_TRUE(eventually([&] { return calls.load() >= 2; }));  // the run_once catch-up
  EXPECT_EQ(max_running.load(), 1);
  bool caught_up = false;
  for (const auto& r : a.records()) caught_up |= r.catch_up && r.outcome == FiringOutcome::ran;
  EXPECT_TRUE(eventually([&] {
    for (const auto& r : a.records()) caught_up |= r.catch_up && r.outcome == FiringOutcome::ran;
    return caught_up;
  }));
}

// The soak (docs/scheduler.md) missed an instant with no fault: the timer woke after both the
// end of a firing's lock hold and the task's next instant, queued the next firing before the
// hold's release, and the firing found the lock held by its own replica's previous firing (its
// listener said ran_elsewhere; nobody ran the instant). A hold that has ended is released before
// the next firing of its task tries the lock.
TEST(Scheduler, AnEndedHoldIsReleasedBeforeTheTasksNextFiring) {
  World w;
  // 1 s rate: window 1 s - 2 * 250 ms - 100 ms = 400 ms, hold until I + 400 + 250 ms.
  auto& a = w.replica(Duration{0},
                      {.max_clock_skew = 250ms, .latency_allowance = 100ms, .max_concurrent = 1});
  a.add({.name = "tick", .trigger = Trigger::fixed_rate(1s)});
  w.start();
  w.run_for(1500ms, 50ms);  // origin and origin + 1 s ran; the hold lasts until origin + 1.65 s
  ASSERT_EQ(a.count_task("tick", FiringOutcome::ran), 2);
  w.clock->advance(600ms);  // one late wake-up: the hold ended and origin + 2 s is due
  ASSERT_TRUE(eventually([&] { return a.records().size() >= 3; }));
  auto r = a.records();
  EXPECT_EQ(r.back().instant, w.origin + 2s);
  EXPECT_EQ(r.back().outcome, FiringOutcome::ran) << r.back().detail;
}

TEST(Scheduler, ALateFiringIsSkippedUnderTheDefaultPolicy) {
  World w;
  auto& a = w.replica(Duration{0}, {.max_concurrent = 1});
  std::atomic<bool> release{false};
  a.add({.name = "hog", .trigger = Trigger::fixed_rate(60s)}, [&](LeaderContext&) {
    while (!release.load()) std::this_thread::sleep_for(1ms);
  });
  a.add({.name = "report", .trigger = Trigger::fixed_rate(10s)});
  w.start();
  w.run_for(61s, 250ms, false);  // the hog holds the only worker; "report" waits in the queue
  release = true;
  ASSERT_TRUE(eventually([&] { return a.count(FiringOutcome::skipped_late) >= 1; }));
  EXPECT_EQ(a.count_task("report", FiringOutcome::ran), 0);
}

TEST(Scheduler, LostLeaseStopsTheRunningTaskAndTheSchedulerGoesOn) {
  World w;
  auto& a = w.replica(Duration{0}, {});
  std::atomic<bool> saw_stop{false};
  std::atomic<int> calls{0};
  a.add({.name = "long", .trigger = Trigger::fixed_rate(120s)}, [&](LeaderContext& ctx) {
    if (calls.fetch_add(1) > 0) return;
    while (!ctx.stop_token().stop_requested()) std::this_thread::sleep_for(1ms);
    saw_stop = true;
  });
  w.start();
  w.run_for(121s, 250ms, false);
  ASSERT_EQ(calls.load(), 1);
  set_memory_store_unavailable(*w.store, true);  // renewals fail from now on
  w.run_for(65s, 500ms, false);                  // past the lease's local deadline (60 s - 12 s)
  ASSERT_TRUE(eventually([&] { return saw_stop.load(); }));
  set_memory_store_unavailable(*w.store, false);
  w.run_for(130s, 500ms, false);
  EXPECT_TRUE(eventually([&] { return calls.load() >= 2; }));
  bool reported = false;
  for (const auto& r : a.records())
    reported |= r.detail.find("lease was lost") != std::string::npos;
  EXPECT_TRUE(reported);
}

TEST(Scheduler, StopCancelsRunningTasksAndReleasesEveryLease) {
  World w;
  auto& a = w.replica(Duration{0}, {});
  std::atomic<bool> started{false};
  a.add({.name = "waits", .trigger = Trigger::fixed_rate(10s)}, [&](LeaderContext& ctx) {
    started = true;
    while (!ctx.stop_token().stop_requested()) std::this_thread::sleep_for(1ms);
    throw OperationCancelled();
  });
  a.add({.name = "quick", .trigger = Trigger::fixed_rate(10s)});
  w.start();
  w.run_for(11s, 250ms, false);
  ASSERT_TRUE(
      eventually([&] { return started.load() && a.count_task("quick", FiringOutcome::ran) >= 1; }));
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    a.scheduler->stop();
    stopped = true;
  });
  // "quick" is parked in its hold; stop() waits for the hold's end on the fake clock.
  for (int i = 0; i < 100 && !stopped.load(); ++i) {
    w.clock->advance(250ms);
    std::this_thread::sleep_for(2ms);
  }
  stopper.join();
  EXPECT_FALSE(w.held("waits"));
  EXPECT_FALSE(w.held("quick"));
  EXPECT_EQ(a.count_task("waits", FiringOutcome::cancelled), 1);
}

TEST(Scheduler, IntrospectionShowsNextFiringLastResultAndToken) {
  World w;
  auto& a = w.replica(Duration{0}, {});
  a.add({.name = "report", .trigger = Trigger::fixed_rate(10s)});
  w.start();
  w.run_for(25s, 250ms);
  auto s = a.scheduler->task("report");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->trigger, "every 10s");
  ASSERT_TRUE(s->next_firing);
  EXPECT_EQ(*s->next_firing, w.origin + 30s);  // multiples of 10 s since the epoch, from start
  ASSERT_TRUE(s->last);
  EXPECT_EQ(s->last->outcome, FiringOutcome::ran);
  EXPECT_EQ(*s->last->instant, w.origin + 20s);
  EXPECT_GT(s->last_fencing_token, 0u);
  EXPECT_EQ(s->runs, 3u);  // origin + 0 s, 10 s, 20 s
  EXPECT_FALSE(a.scheduler->task("unknown"));
}

TEST(Scheduler, GroupElectorRunsEachInstantOncePerSlot) {
  World w;
  GroupOptions g = group_scheduled_options(2);
  for (Duration skew : {Duration{0}, 900ms, -900ms}) {
    auto& r = w.replica(skew, {}, LeaderGroupElector(w.store, g, {.clock = w.clock}));
    r.add({.name = "shards", .trigger = Trigger::fixed_rate(10s)});
  }
  w.start();
  w.run_for(60s, 250ms);
  auto runs = w.runs_per_instant("shards");
  ASSERT_GE(runs.size(), 5u);
  for (const auto& [instant, n] : runs) EXPECT_EQ(n, 2) << "instant " << instant;
  for (const auto& [instant, slots] : w.slots_per_instant("shards"))
    EXPECT_EQ(slots, (std::set<int>{0, 1})) << "instant " << instant;
}

TEST(Scheduler, StrategicElectorRunsEachInstantOnceOnThePick) {
  World w;
  for (int i = 0; i < 2; ++i) {
    StrategicOptions so;
    so.election = scheduled_election_options();
    so.election.node_id = "node-" + std::to_string(i);
    auto e = std::make_shared<StrategicElector>(w.store, "reports", strategies::fifo(), so,
                                                ElectorHooks{.clock = w.clock});
    e->register_candidate();
    auto& r = w.replica(i == 0 ? Duration{0} : 1s, {}, e);
    r.add({.name = "report", .trigger = Trigger::fixed_rate(10s)});
  }
  w.start();
  w.run_for(50s, 250ms, false);  // the winner's record comes after its hold (inside the action)
  w.stop_all();
  auto runs = w.runs_per_instant("report");
  ASSERT_GE(runs.size(), 4u);
  for (const auto& [instant, n] : runs) EXPECT_EQ(n, 1) << "instant " << instant;
}

TEST(Scheduler, FixedDelayKeepsRunsApartAcrossReplicas) {
  World w;
  auto& a = w.replica(Duration{0}, {});
  auto& b = w.replica(Duration{0}, {});
  for (auto* r : {&a, &b})
    r->add({.name = "sweep", .trigger = Trigger::fixed_delay(10s), .initial_delay = 1s});
  w.start();
  w.run_for(100s, 250ms, false);
  ASSERT_TRUE(
      eventually([&] { return a.count(FiringOutcome::ran) + b.count(FiringOutcome::ran) >= 5; }));
  std::vector<WallTime> starts;
  for (auto* r : {&a, &b})
    for (const auto& rec : r->records())
      if (rec.outcome == FiringOutcome::ran) starts.push_back(rec.started);
  std::sort(starts.begin(), starts.end());
  for (std::size_t i = 1; i < starts.size(); ++i)
    EXPECT_GE(starts[i] - starts[i - 1], 9750ms);  // delay - latency_allowance
}

TEST(Scheduler, OptionsAndTasksAreCheckedUpFront) {
  World w;
  auto store = w.store;
  EXPECT_THROW(Scheduler(LeaderElector(store, {.wait_time = 0s}), {}), InvalidArgument);
  auto& a = w.replica(Duration{0}, {});
  auto refused = [&](TaskOptions o) {
    try {
      a.scheduler->schedule(std::move(o), [](LeaderContext&) {});
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refused({.name = "fast", .trigger = Trigger::fixed_rate(1s)}).find("too close"),
            std::string::npos);
  EXPECT_NE(refused({.name = "cron", .trigger = Trigger::cron("* * * * * *")}).find("too close"),
            std::string::npos);
  EXPECT_NE(
      refused({.name = "j", .trigger = Trigger::fixed_rate(10s), .jitter = 6s}).find("jitter"),
      std::string::npos);
  EXPECT_NE(refused({.name = "bad name!", .trigger = Trigger::fixed_rate(10s)}), "accepted");
  EXPECT_EQ(refused({.name = "ok", .trigger = Trigger::fixed_rate(10s)}), "accepted");
  EXPECT_NE(refused({.name = "ok", .trigger = Trigger::fixed_rate(10s)}).find("already"),
            std::string::npos);
  EXPECT_THROW(SchedulerOptions{.max_concurrent = 0}.validate(), InvalidArgument);
  EXPECT_THROW(Trigger::fixed_rate(Duration{0}), InvalidArgument);
  // With clocks known to agree within 200 ms, a 1 s schedule fits.
  World close;
  auto& c = close.replica(Duration{0}, {.max_clock_skew = 200ms, .latency_allowance = 100ms});
  EXPECT_NO_THROW(c.scheduler->schedule({.name = "fast", .trigger = Trigger::fixed_rate(1s)},
                                        [](LeaderContext&) {}));
}

}  // namespace
}  // namespace leader::test
