// Scheduler overhead on the memory store, against a baseline measured in the same run:
//   1. baseline: LeaderElector::run_if_leader with a no-op action (acquire + release), CPU per
//   call;
//   2. 1,000 fixed-rate 1 s tasks on one Scheduler: CPU per firing (ratio to 1.), CPU share of
//      one core, firings that ran / were late, resident memory per task;
//   3. 1,000 idle tasks (a yearly cron): CPU share of the timer alone.
// Usage: bench_scheduler [seconds per phase, default 10]

#include "leader/scheduler.hpp"

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "leader/stores/memory.hpp"

namespace {

using namespace std::chrono_literals;
using Seconds = std::chrono::duration<double>;

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

long rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string key;
  long value = 0;
  while (in >> key) {
    if (key == "VmRSS:") {
      in >> value;
      return value;
    }
    in.ignore(1 << 12, '\n');
  }
  return 0;
}

struct Counter : leader::SchedulerListener {
  std::atomic<long> ran{0}, other{0};
  void on_firing(const leader::FiringRecord& r) override {
    (r.outcome == leader::FiringOutcome::ran ? ran : other).fetch_add(1);
  }
};

double baseline_cpu_per_call(long calls) {
  auto store = leader::make_memory_store();
  leader::LeaderElector elector(store, leader::scheduled_election_options());
  double start = cpu_seconds();
  for (long i = 0; i < calls; ++i)
    (void)elector.run_if_leader("b-" + std::to_string(i % 1000), [] {});
  return (cpu_seconds() - start) / static_cast<double>(calls);
}

struct Phase {
  double cpu = 0, wall = 0;
  long ran = 0, other = 0, rss_per_task_bytes = 0;
  double schedule_ms = 0;  ///< schedule() of every task
};

Phase run_tasks(const leader::Trigger& trigger, int tasks, double seconds) {
  auto store = leader::make_memory_store();
  auto counter = std::make_shared<Counter>();
  long rss_before = rss_kib();
  leader::Scheduler scheduler(
      store, {.max_clock_skew = 100ms, .latency_allowance = 50ms, .listener = counter});
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < tasks; ++i)
    scheduler.schedule({.name = "task-" + std::to_string(i), .trigger = trigger},
                       [](leader::LeaderContext&) {});
  Phase p;
  p.schedule_ms = Seconds(std::chrono::steady_clock::now() - t0).count() * 1000;
  p.rss_per_task_bytes = (rss_kib() - rss_before) * 1024 / tasks;
  scheduler.start();
  std::this_thread::sleep_for(1500ms);  // warm up: the first burst
  long ran0 = counter->ran, other0 = counter->other;
  double cpu0 = cpu_seconds();
  auto wall0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(Seconds(seconds));
  p.cpu = cpu_seconds() - cpu0;
  p.wall = Seconds(std::chrono::steady_clock::now() - wall0).count();
  p.ran = counter->ran - ran0;
  p.other = counter->other - other0;
  scheduler.stop();
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 10.0;
  // The scheduler phases first (a fresh heap, so the resident-memory delta is not hidden by
  // memory the baseline freed), the baseline last.
  Phase busy = run_tasks(leader::Trigger::fixed_rate(1s), 1000, seconds);
  Phase idle = run_tasks(leader::Trigger::cron("0 0 1 1 *"), 1000, seconds);
  double base = baseline_cpu_per_call(50000);
  double per_firing = busy.ran > 0 ? busy.cpu / static_cast<double>(busy.ran) : 0;
  std::printf("| measurement | value | ratio to baseline |\n|---|---|---|\n");
  std::printf("| baseline: run_if_leader (no-op), CPU per call | %.1f us | 1.00 |\n", base * 1e6);
  std::printf("| 1,000 tasks x 1 s: CPU per firing | %.1f us | %.2f |\n", per_firing * 1e6,
              per_firing / base);
  std::printf("| 1,000 tasks x 1 s: firings ran / not run (late, busy) in %.0f s | %ld / %ld | |\n",
              busy.wall, busy.ran, busy.other);
  std::printf("| 1,000 tasks x 1 s: CPU share of one core | %.1f %% | |\n",
              100.0 * busy.cpu / busy.wall);
  std::printf("| 1,000 tasks: resident memory per scheduled task | %ld bytes | |\n",
              busy.rss_per_task_bytes);
  std::printf("| 1,000 idle tasks (yearly cron): CPU share of one core | %.2f %% | |\n",
              100.0 * idle.cpu / idle.wall);
  std::printf(
      "| schedule() of 1,000 tasks: fixed rate / cron (gap checks) | %.0f ms / %.0f ms | |\n",
      busy.schedule_ms, idle.schedule_ms);
  return 0;
}
