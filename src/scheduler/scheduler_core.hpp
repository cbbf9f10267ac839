#pragma once
// The Scheduler's engine: one timer thread that dispatches due firings, worker threads that run
// them (firing.cpp), and lock holds parked until their end (docs/scheduler.md).

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "leader/scheduler.hpp"

namespace leader::detail {

/// The elector a scheduler runs its firings with (single, group or strategic: every elector is
/// an Elector whose acquire() applies its own rules, e.g. the strategy's turn).
using ElectorRef = std::shared_ptr<const Elector>;

/// One firing handed to a worker.
struct Firing {
  std::optional<WallTime> instant{};  ///< empty for fixed_delay
  std::optional<WallTime> next{};     ///< the instant after it, when known
  Duration window{};                  ///< how long after `instant` a replica may still start it
  /// run_once: how long after `instant` a catch-up may still start (the gap's full window, not
  /// capped by misfire_threshold); every run of a run_once task holds its lock past it.
  Duration catch_up_window{};
  bool catch_up = false;  ///< a run_once catch-up firing
  int missed = 0;         ///< older instants this dispatch dropped
};

/// A task and its timing on this replica (guarded by SchedulerCore::mu_).
struct TaskState {
  TaskOptions options;
  Scheduler::FiringTask fn;
  bool scheduled = false;  ///< first due time computed
  std::optional<WallTime> next_instant;
  WallTime next_due_wall{};     ///< next_instant + this firing's jitter
  TimePoint next_due_steady{};  ///< fixed_delay: when the next attempt is due
  bool running = false;
  std::optional<Firing> pending_catch_up;
  std::stop_source stop;
  TaskStatus status;
};

/// A lease kept after its task returned, until `until` (the firing's hold end).
struct Parked {
  TimePoint until;
  std::optional<LeaseGuard> guard;
  bool failed = false;
  std::string error;
  const TaskState* task = nullptr;  ///< whose firing it was (set by finish_firing)
};

/// What running a firing produced: the record, and a lease to keep until its hold end.
struct FiringResult {
  FiringRecord record;
  std::shared_ptr<Parked> parked;
};

class SchedulerCore {
 public:
  SchedulerCore(ElectorRef elector, SchedulerOptions options);
  ~SchedulerCore();
  void add(TaskOptions options, Scheduler::FiringTask fn);
  void start();
  void stop();
  [[nodiscard]] std::vector<TaskStatus> tasks() const;
  [[nodiscard]] std::optional<TaskStatus> task(std::string_view name) const;
  [[nodiscard]] std::uint64_t listener_errors() const { return listener_errors_.load(); }

 private:
  void timer_loop();
  void worker_loop();
  /// Dispatches the task when due; returns the steady time it is next due.
  TimePoint visit(TaskState& t, TimePoint now_s, WallTime now_w);
  void first_due(TaskState& t, TimePoint now_s, WallTime now_w);
  void dispatch(TaskState& t, Firing firing);
  void post(std::function<void()> job);
  void finish_firing(TaskState& t, const FiringResult& result);
  void report(const FiringRecord& record);
  /// Publishes a firing event on the elector's bus.
  void publish(EventKind kind, const FiringRecord& record, const LeaseInfo* lease = nullptr);
  void release_parked(const std::shared_ptr<Parked>& p) noexcept;
  Duration draw_jitter(const TaskOptions& o);
  [[nodiscard]] Duration window(WallTime instant, const std::optional<WallTime>& next) const;
  [[nodiscard]] Duration full_window(WallTime instant, const std::optional<WallTime>& next) const;
  void check_trigger(const TaskOptions& o) const;
  TaskStatus snapshot(const TaskState& t) const;

  // firing.cpp
  FiringResult run_firing(TaskState& t, Firing firing);
  [[nodiscard]] TimePoint hold_end(const TaskState& t, const Firing& f, WallTime reply_w,
                                   TimePoint reply_s) const;
  [[nodiscard]] bool late(const Firing& f, WallTime at) const;

  ElectorRef elector_;
  std::shared_ptr<EventBus> events_;
  SchedulerOptions options_;
  std::shared_ptr<Clock> clock_;
  std::shared_ptr<WallClock> wall_;
  mutable std::mutex mu_;
  std::condition_variable timer_cv_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::unique_ptr<TaskState>> tasks_;
  std::vector<std::shared_ptr<Parked>> parked_;
  std::thread timer_;
  std::vector<std::thread> workers_;
  WallTime start_wall_{};
  TimePoint start_steady_{};
  bool started_ = false;
  bool stopping_ = false;
  bool workers_exit_ = false;
  std::mt19937_64 rng_;
  std::atomic<std::uint64_t> listener_errors_{0};
};

}  // namespace leader::detail
