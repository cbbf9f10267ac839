#pragma once
// A fake world for scheduler tests: one FakeClock (steady time), one memory store, and replicas
// (one Scheduler each) whose wall clocks follow the fake clock with a fixed offset (skew).

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "leader/scheduler.hpp"
#include "leader/stores/memory.hpp"

namespace leader::test {

using namespace std::chrono_literals;

/// A UTC wall time from calendar fields.
inline WallTime utc_wall(int y, int mo, int d, int h = 0, int mi = 0, int s = 0) {
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

/// Polls `done` every millisecond for up to 5 s of real time (only stops a broken test).
template <class Pred>
bool eventually(Pred done) {
  for (int i = 0; i < 5000 && !done(); ++i) std::this_thread::sleep_for(1ms);
  return done();
}

/// Group options for scheduled tasks (wait 0, auto_extend on).
inline GroupOptions group_scheduled_options(int slots) {
  GroupOptions g;
  g.election.wait_time = Duration{0};
  g.election.auto_extend = true;
  g.max_leaders = slots;
  return g;
}

/// Keeps every firing record of one replica.
class Recorder : public SchedulerListener {
 public:
  void on_firing(const FiringRecord& r) override {
    std::lock_guard l(mu_);
    records_.push_back(r);
  }
  std::vector<FiringRecord> records() const {
    std::lock_guard l(mu_);
    return records_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<FiringRecord> records_;
};

/// One replica: a Scheduler with its own wall clock.
struct Replica {
  std::shared_ptr<Recorder> rec = std::make_shared<Recorder>();
  std::shared_ptr<WallClock> wall;
  std::unique_ptr<Scheduler> scheduler;
  std::vector<TaskOptions> tasks;
  WallTime started{};

  void add(
      TaskOptions o, Scheduler::Task fn = [](LeaderContext&) {}) {
    tasks.push_back(o);
    scheduler->schedule(std::move(o), std::move(fn));
  }
  [[nodiscard]] std::vector<FiringRecord> records() const { return rec->records(); }
  [[nodiscard]] int count(FiringOutcome o) const {
    auto r = records();
    return static_cast<int>(
        std::count_if(r.begin(), r.end(), [&](auto& x) { return x.outcome == o; }));
  }
  [[nodiscard]] int count_task(const std::string& task, FiringOutcome o) const {
    auto r = records();
    return static_cast<int>(std::count_if(
        r.begin(), r.end(), [&](auto& x) { return x.task == task && x.outcome == o; }));
  }
  /// Instants of instant-based tasks due on this replica by now.
  [[nodiscard]] std::size_t due() const {
    std::size_t n = 0;
    WallTime now = wall->now();
    for (const auto& t : tasks) {
      for (auto at = t.trigger.next_after(started + t.initial_delay - 1ms); at && *at <= now;
           at = t.trigger.next_after(*at))
        ++n;
    }
    return n;
  }
};

/// The shared clock and store, and the replicas.
struct World {
  explicit World(WallTime origin_ = utc_wall(2024, 5, 1)) : origin(origin_) {}
  ~World() { stop_all(); }
  /// Stops every replica while fake time runs (stop() waits for lock holds on the fake clock).
  void stop_all() {
    std::atomic<bool> done{false};
    std::thread stopper([&] {
      for (auto& r : replicas)
        if (r->scheduler) r->scheduler->stop();
      done = true;
    });
    while (!done.load()) {
      clock->advance(500ms);
      std::this_thread::sleep_for(1ms);
    }
    stopper.join();
    for (auto& r : replicas) r->scheduler.reset();
  }
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<LeaseStore> store = make_memory_store({.clock = clock});
  WallTime origin;
  std::vector<std::unique_ptr<Replica>> replicas;

  SchedulerOptions with_clocks(SchedulerOptions o, Replica& r, Duration skew) {
    r.wall = WallClock::following(clock, origin + skew);
    o.clock = clock;
    o.wall_clock = r.wall;
    o.listener = r.rec;
    o.seed = 42;
    return o;
  }
  Replica& replica(Duration skew, SchedulerOptions o) {
    auto r = std::make_unique<Replica>();
    ElectionOptions e = scheduled_election_options();
    e.node_id = "replica-" + std::to_string(replicas.size());
    r->scheduler = std::make_unique<Scheduler>(LeaderElector(store, e, {.clock = clock}),
                                               with_clocks(o, *r, skew));
    replicas.push_back(std::move(r));
    return *replicas.back();
  }
  template <class E>
  Replica& replica(Duration skew, SchedulerOptions o, E elector) {
    auto r = std::make_unique<Replica>();
    r->scheduler = std::make_unique<Scheduler>(std::move(elector), with_clocks(o, *r, skew));
    replicas.push_back(std::move(r));
    return *replicas.back();
  }
  void start() {
    for (auto& r : replicas) {
      r->started = r->wall->now();
      r->scheduler->start();
    }
  }
  /// Advances fake time by `step` until `total`, `pace` of real time per step; with `settle`,
  /// after each step waits until every replica reported every instant due on its clock.
  void run_for(Duration total, Duration step, bool settle = true, Duration pace = 2ms) {
    for (Duration t{0}; t < total; t += step) {
      clock->advance(step);
      std::this_thread::sleep_for(pace);  // lets timers see the step (holds end on time)
      if (!settle) continue;
      for (auto& r : replicas) eventually([&] { return r->records().size() >= r->due(); });
    }
  }
  std::map<long long, int> runs_per_instant(const std::string& task) const {
    std::map<long long, int> out;
    for (const auto& r : replicas)
      for (const auto& rec : r->records()) {
        if (rec.task != task || !rec.instant) continue;
        auto key = std::chrono::duration_cast<Duration>(rec.instant->time_since_epoch()).count();
        out[key] += rec.outcome == FiringOutcome::ran ? 1 : 0;
      }
    return out;
  }
  std::map<long long, std::set<int>> slots_per_instant(const std::string& task) const {
    std::map<long long, std::set<int>> out;
    for (const auto& r : replicas)
      for (const auto& rec : r->records())
        if (rec.task == task && rec.instant && rec.outcome == FiringOutcome::ran)
          out[std::chrono::duration_cast<Duration>(rec.instant->time_since_epoch()).count()].insert(
              rec.slot);
    return out;
  }
  std::vector<std::uint64_t> tokens(const std::string& task) const {
    std::map<long long, std::uint64_t> by_instant;
    for (const auto& r : replicas)
      for (const auto& rec : r->records())
        if (rec.task == task && rec.instant && rec.outcome == FiringOutcome::ran)
          by_instant[std::chrono::duration_cast<Duration>(rec.instant->time_since_epoch())
                         .count()] = rec.fencing_token;
    std::vector<std::uint64_t> out;
    for (const auto& [k, v] : by_instant) out.push_back(v);
    return out;
  }
  bool held(const std::string& lock) const {
    return store->inspect(lock, Deadline::after(1s)).held();
  }
};

}  // namespace leader::test
