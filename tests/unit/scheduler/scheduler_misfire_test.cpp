// run_once catch-ups are at most once across replicas (a catch-up is locked like an on-time
// firing, and every run of a run_once task holds the lock until the catch-up window has closed
// everywhere), and firings are published on the elector's event bus. Fake clock, memory store.

#include "scheduler_world.hpp"

namespace leader::test {
namespace {

long long key(WallTime t) {
  return std::chrono::duration_cast<Duration>(t.time_since_epoch()).count();
}

// Collects the events of one bus.
struct EventLog {
  std::mutex mu;
  std::vector<ElectionEvent> events;
  Subscription sub;
  explicit EventLog(EventBus& bus)
      : sub(bus.subscribe([this](const ElectionEvent& e) {
          std::lock_guard l(mu);
          events.push_back(e);
        })) {}
  std::vector<ElectionEvent> of(EventKind kind, const std::string& task) {
    EXPECT_TRUE(sub.wait_idle(5s));
    std::lock_guard l(mu);
    std::vector<ElectionEvent> out;
    for (const auto& e : events)
      if (e.kind == kind && e.lock == task) out.push_back(e);
    return out;
  }
};

LeaderElector elector(World& w, const std::string& node) {
  ElectionOptions e = scheduled_election_options();
  e.node_id = node;
  return LeaderElector(w.store, e, {.clock = w.clock});
}

// A task whose first firing is at 60 s (initial delay: not the instant at the start).
TaskOptions hog_task(const std::string& name) {
  return {.name = name, .trigger = Trigger::fixed_rate(60s), .initial_delay = 30s};
}

// A task that blocks its worker until `release` is set.
Scheduler::Task hog(const std::atomic<bool>& release) {
  return [&release](LeaderContext&) {
    while (!release.load()) std::this_thread::sleep_for(1ms);
  };
}

const TaskOptions kReport{
    .name = "report", .trigger = Trigger::fixed_rate(10s), .misfire = MisfirePolicy::run_once};

TEST(SchedulerMisfire, RunOnceCatchUpNeverRepeatsAFiringThatRanOnTimeElsewhere) {
  // A runs instant 60 s on time. B (clock 1.5 s behind) is busy with a hog through its window
  // and starts its catch-up when A's lock hold of the old rule (instant + window + skew = 67 s)
  // has ended: the catch-up window (gap - 2 skew - allowance = 5.75 s) has passed on B, so the
  // catch-up is a misfire instead of a second run of 60 s.
  World w;
  std::atomic<bool> release{false};
  auto& a = w.replica(Duration{0}, {}, elector(w, "a"));
  LeaderElector eb = elector(w, "b");
  EventLog b_events(eb.events());
  auto& b = w.replica(-1500ms, {.max_concurrent = 1}, eb);
  b.add(hog_task("hog-b"), hog(release));
  for (auto* r : {&a, &b}) r->add(kReport);
  w.start();
  w.run_for(68500ms, 250ms, false, 3ms);  // B's clock: 67 s; its report(60) waits behind the hog
  release = true;
  const long long i60 = key(w.origin + 60s);
  auto b_saw_60 = [&] {
    for (const auto& r : b.records())
      if (r.task == "report" && r.instant && key(*r.instant) == i60) return true;
    return false;
  };
  ASSERT_TRUE(eventually(b_saw_60));
  auto runs = w.runs_per_instant("report");
  ASSERT_GE(runs.size(), 6u);
  for (const auto& [instant, n] : runs) EXPECT_EQ(n, 1) << "instant " << instant;
  EXPECT_EQ(runs[i60], 1);
  for (const auto& r : b.records()) {
    if (r.task != "report" || !r.instant || key(*r.instant) != i60) continue;
    EXPECT_EQ(r.outcome, FiringOutcome::skipped_late);
    EXPECT_TRUE(r.catch_up);
    EXPECT_NE(r.detail.find("catch-up window"), std::string::npos) << r.detail;
  }
  auto misfires = b_events.of(EventKind::firing_misfired, "report");
  ASSERT_EQ(misfires.size(), 1u);
  ASSERT_TRUE(misfires[0].firing && misfires[0].firing->instant);
  EXPECT_EQ(key(*misfires[0].firing->instant), i60);
  EXPECT_TRUE(misfires[0].firing->catch_up);
  EXPECT_EQ(misfires[0].firing->outcome, FiringOutcome::skipped_late);
}

TEST(SchedulerMisfire, WhenEveryReplicaMissedAFiringExactlyOneCatchesUp) {
  // Both replicas are busy through instant 60 s's window (5 s) and free again inside its
  // catch-up window (5.75 s): one of them runs the catch-up, the other finds the lock held.
  World w;
  std::atomic<bool> release{false};
  auto& a = w.replica(Duration{0}, {.max_concurrent = 1});
  auto& b = w.replica(250ms, {.max_concurrent = 1});
  a.add(hog_task("hog-a"), hog(release));
  b.add(hog_task("hog-b"), hog(release));
  for (auto* r : {&a, &b}) r->add(kReport);
  w.start();
  w.run_for(65250ms, 250ms, false, 3ms);  // clocks: a 65.25 s, b 65.5 s (late, < 65.75)
  release = true;
  const long long i60 = key(w.origin + 60s);
  auto seen = [&](Replica& r) {
    for (const auto& x : r.records())
      if (x.task == "report" && x.instant && key(*x.instant) == i60) return true;
    return false;
  };
  ASSERT_TRUE(eventually([&] { return seen(a) && seen(b); }));
  EXPECT_EQ(w.runs_per_instant("report")[i60], 1);
  int catch_ups = 0;
  for (auto* r : {&a, &b})
    for (const auto& x : r->records())
      catch_ups += x.task == "report" && x.catch_up && x.outcome == FiringOutcome::ran ? 1 : 0;
  EXPECT_EQ(catch_ups, 1);
}

TEST(SchedulerEvents, FiringsArePublishedOnTheElectorsBus) {
  World w;
  LeaderElector ea = elector(w, "a");
  LeaderElector eb = elector(w, "b");
  EventLog a_events(ea.events());
  EventLog b_events(eb.events());
  auto& a = w.replica(500ms, {}, ea);  // ahead: it wins every firing
  auto& b = w.replica(Duration{0}, {}, eb);
  std::atomic<bool> release{false};
  for (auto* r : {&a, &b}) {
    // initial_delay: the first instant is 10 s on both (b would run 0 s alone).
    r->add({.name = "ok", .trigger = Trigger::fixed_rate(10s), .initial_delay = 5s});
    r->add({.name = "boom", .trigger = Trigger::fixed_rate(10s), .initial_delay = 5s},
           [](LeaderContext&) { throw std::runtime_error("disk full"); });
  }
  a.add({.name = "slow", .trigger = Trigger::fixed_rate(10s), .initial_delay = 5s}, hog(release));
  w.start();
  w.run_for(31s, 250ms, false, 3ms);
  release = true;
  w.run_for(1s, 250ms, false, 3ms);
  w.stop_all();

  auto started = a_events.of(EventKind::firing_started, "ok");
  auto finished = a_events.of(EventKind::firing_finished, "ok");
  ASSERT_GE(started.size(), 3u);
  ASSERT_EQ(finished.size(), started.size());
  for (std::size_t i = 0; i < started.size(); ++i) {
    ASSERT_TRUE(started[i].firing && started[i].firing->instant);
    ASSERT_TRUE(finished[i].firing && finished[i].firing->instant);
    EXPECT_EQ(*started[i].firing->instant, *finished[i].firing->instant);
    EXPECT_GT(started[i].lease.fencing_token, 0u);
    EXPECT_EQ(started[i].lease.fencing_token, finished[i].lease.fencing_token);
    EXPECT_EQ(started[i].lease.node_id, "a");
    EXPECT_EQ(finished[i].firing->outcome, FiringOutcome::ran);
    EXPECT_LT(started[i].sequence, finished[i].sequence);
  }
  auto failed = a_events.of(EventKind::firing_finished, "boom");
  ASSERT_GE(failed.size(), 3u);
  EXPECT_EQ(failed[0].firing->outcome, FiringOutcome::failed);
  EXPECT_NE(failed[0].detail.find("disk full"), std::string::npos);
  // b saw the same instants run on a.
  auto elsewhere = b_events.of(EventKind::firing_skipped, "ok");
  ASSERT_GE(elsewhere.size(), 3u);
  EXPECT_EQ(elsewhere[0].firing->outcome, FiringOutcome::ran_elsewhere);
  EXPECT_TRUE(b_events.of(EventKind::firing_started, "ok").empty());
  // "slow" blocked: the next instants found it running here.
  auto busy = a_events.of(EventKind::firing_skipped, "slow");
  ASSERT_GE(busy.size(), 1u);
  EXPECT_EQ(busy[0].firing->outcome, FiringOutcome::skipped_busy);
  // Firing events never change the leadership state of the lock.
  for (const auto& e : a_events.of(EventKind::firing_started, "ok")) EXPECT_FALSE(e.state);
}

}  // namespace
}  // namespace leader::test
