// Scheduler lifecycle: the timer thread, the workers, task registration and status.

#include <algorithm>

#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "leader/uri.hpp"
#include "scheduler_core.hpp"

namespace leader {
namespace detail {
namespace {

// The timer re-reads the wall clock at least this often (wall-clock steps, new tasks).
constexpr Duration kMaxSleep = std::chrono::seconds(1);
// Instants checked by schedule() for gaps too short for max_clock_skew.
constexpr int kGapsChecked = 1000;
// ... within this horizon (a year and a bit: every month length and DST transition).
constexpr auto kGapHorizon = std::chrono::hours(24 * 400);

Duration to_duration(WallTime::duration d) { return std::chrono::duration_cast<Duration>(d); }

}  // namespace

SchedulerCore::SchedulerCore(ElectorRef elector, SchedulerOptions options)
    : elector_(std::move(elector)), options_(std::move(options)) {
  options_.validate();
  clock_ = options_.clock ? options_.clock : Clock::system();
  wall_ = options_.wall_clock ? options_.wall_clock : WallClock::system();
  if (!elector_) throw InvalidArgument("Scheduler: no elector");
  events_ = elector_->event_bus();
  rng_.seed(options_.seed != 0 ? options_.seed : std::random_device{}());
  if (!elector_->options().auto_extend)
    throw InvalidArgument(
        "Scheduler: the elector's auto_extend must be on (a lease is kept after its task until "
        "the firing's window closes; use scheduled_election_options())");
}

SchedulerCore::~SchedulerCore() {
  stop();
  for (auto& w : workers_)
    if (w.joinable()) w.join();
}

Duration SchedulerCore::window(WallTime instant, const std::optional<WallTime>& next) const {
  if (!next) return options_.misfire_threshold;
  Duration gap = to_duration(*next - instant);
  return std::min(options_.misfire_threshold,
                  gap - 2 * options_.max_clock_skew - options_.latency_allowance);
}

Duration SchedulerCore::full_window(WallTime instant, const std::optional<WallTime>& next) const {
  if (!next) return options_.misfire_threshold;
  return to_duration(*next - instant) - 2 * options_.max_clock_skew - options_.latency_allowance;
}

void SchedulerCore::check_trigger(const TaskOptions& o) const {
  const std::string task = "task '" + o.name + "': ";
  if (o.initial_delay < Duration{0} || o.jitter < Duration{0})
    throw InvalidArgument(task + "initial_delay and jitter must be >= 0");
  check_duration_bound("TaskOptions", "initial_delay", o.initial_delay);
  check_duration_bound("TaskOptions", "jitter", o.jitter);
  if (o.trigger.kind() == Trigger::Kind::fixed_delay) {
    if (o.trigger.period() <= options_.latency_allowance)
      throw InvalidArgument(task + "fixed_delay " + format_duration(o.trigger.period()) +
                            " must be longer than latency_allowance " +
                            format_duration(options_.latency_allowance));
    return;
  }
  Duration smallest = Duration::max();
  WallTime at = wall_->now();
  const WallTime horizon = at + kGapHorizon;
  const bool fixed_rate = o.trigger.kind() == Trigger::Kind::fixed_rate;
  if (fixed_rate) smallest = window(at, at + o.trigger.period());  // one gap: the period
  for (int i = 0; i < kGapsChecked && at < horizon && !fixed_rate; ++i) {
    auto next = o.trigger.next_after(at);
    if (!next) break;
    auto after = o.trigger.next_after(*next);
    if (!after) break;
    smallest = std::min(smallest, window(*next, after));
    at = *next;
  }
  Duration needed = 2 * options_.max_clock_skew + options_.latency_allowance;
  if (smallest <= Duration{0})
    throw InvalidArgument(task + o.trigger.describe() +
                          " has instants too close together: each firing needs a gap longer than "
                          "2 * max_clock_skew + latency_allowance = " +
                          format_duration(needed) +
                          " to the next one (lower max_clock_skew if the clocks are closer)");
  if (o.jitter >= smallest)
    throw InvalidArgument(task + "jitter " + format_duration(o.jitter) +
                          " does not fit the firing window " + format_duration(smallest) +
                          " (min(misfire_threshold, gap - 2 * max_clock_skew - "
                          "latency_allowance))");
}

void SchedulerCore::add(TaskOptions options, Scheduler::FiringTask fn) {
  validate_lock_name(options.name);
  if (!fn) throw InvalidArgument("task '" + options.name + "' has no function");
  check_trigger(options);
  auto t = std::make_unique<TaskState>();
  t->status.name = options.name;
  t->status.trigger = options.trigger.describe();
  t->options = std::move(options);
  t->fn = std::move(fn);
  std::lock_guard lock(mu_);
  for (const auto& other : tasks_)
    if (other->options.name == t->options.name)
      throw InvalidArgument("task '" + t->options.name + "' is already scheduled");
  if (stopping_) throw InvalidArgument("the scheduler is stopped");
  if (started_) first_due(*t, clock_->now(), wall_->now());
  tasks_.push_back(std::move(t));
  timer_cv_.notify_all();
}

void SchedulerCore::start() {
  std::lock_guard lock(mu_);
  if (started_ || stopping_) return;
  started_ = true;
  start_wall_ = wall_->now();
  start_steady_ = clock_->now();
  for (auto& t : tasks_) first_due(*t, start_steady_, start_wall_);
  for (int i = 0; i < options_.max_concurrent; ++i)
    workers_.emplace_back([this] { worker_loop(); });
  timer_ = std::thread([this] { timer_loop(); });
}

Duration SchedulerCore::draw_jitter(const TaskOptions& o) {
  if (o.jitter <= Duration{0}) return Duration{0};
  std::uniform_int_distribution<Duration::rep> d(0, o.jitter.count() - 1);
  return Duration{d(rng_)};
}

void SchedulerCore::first_due(TaskState& t, TimePoint now_s, WallTime now_w) {
  t.scheduled = true;
  if (t.options.trigger.kind() == Trigger::Kind::fixed_delay) {
    t.next_due_steady = saturating_add(now_s, t.options.initial_delay + draw_jitter(t.options));
    return;
  }
  t.next_instant = t.options.trigger.next_after(now_w + t.options.initial_delay - Duration{1});
  if (t.next_instant) t.next_due_wall = *t.next_instant + draw_jitter(t.options);
}

TimePoint SchedulerCore::visit(TaskState& t, TimePoint now_s, WallTime now_w) {
  if (!t.scheduled) first_due(t, now_s, now_w);
  if (t.options.trigger.kind() == Trigger::Kind::fixed_delay) {
    if (t.running || t.next_due_steady == TimePoint::max()) return TimePoint::max();
    if (now_s < t.next_due_steady) return t.next_due_steady;
    t.next_due_steady = TimePoint::max();  // set again when the run ends
    dispatch(t, Firing{});
    return TimePoint::max();
  }
  if (!t.next_instant) return TimePoint::max();
  if (now_w < t.next_due_wall) return saturating_add(now_s, to_duration(t.next_due_wall - now_w));
  Firing f{.instant = t.next_instant};
  f.next = t.options.trigger.next_after(*f.instant);
  while (f.next && *f.next <= now_w && f.missed < kGapsChecked * 100) {  // timer was late
    f.instant = f.next;
    f.next = t.options.trigger.next_after(*f.instant);
    ++f.missed;
  }
  f.window = window(*f.instant, f.next);
  f.catch_up_window = std::max(f.window, full_window(*f.instant, f.next));
  dispatch(t, f);
  t.next_instant = f.next;
  if (!t.next_instant) return TimePoint::max();
  t.next_due_wall = *t.next_instant + draw_jitter(t.options);
  return saturating_add(now_s, to_duration(t.next_due_wall - now_w));
}

void SchedulerCore::dispatch(TaskState& t, Firing firing) {
  if (t.running) {  // never overlap our own previous firing
    FiringRecord rec{.task = t.options.name,
                     .instant = firing.instant,
                     .started = wall_->now(),
                     .finished = wall_->now(),
                     .outcome = FiringOutcome::skipped_busy,
                     .detail = "the previous firing is still running on this replica"};
    if (t.options.misfire == MisfirePolicy::run_once) {
      firing.catch_up = true;
      t.pending_catch_up = firing;
      rec.detail += "; a catch-up firing runs when it ends (run_once)";
    }
    t.status.last = rec;
    ++t.status.skips;
    post([this, rec] {
      publish(EventKind::firing_skipped, rec);
      report(rec);
    });
    return;
  }
  t.running = true;
  t.status.running = true;
  // A hold of this task's previous firing that has ended but is still parked (the timer woke
  // late, after both the hold end and this instant: it visits the tasks before the parked holds)
  // is released first, on the same worker: otherwise this firing can find the lock held by its
  // own replica and nobody runs the instant (the soak saw it). The hold has ended, so releasing
  // it now is what the timer would do. (A release the timer posted earlier may still be running
  // on another worker when this firing starts; the hold ends max_clock_skew + latency_allowance
  // or more before this replica's next instant, so that needs a worker stalled that long.)
  std::vector<std::shared_ptr<Parked>> ended;
  const TimePoint now_s = clock_->now();
  for (auto it = parked_.begin(); it != parked_.end();) {
    if ((*it)->task == &t && (*it)->until <= now_s) {
      ended.push_back(*it);
      it = parked_.erase(it);
    } else {
      ++it;
    }
  }
  post([this, &t, firing, ended = std::move(ended)] {
    for (const auto& p : ended) release_parked(p);
    finish_firing(t, run_firing(t, firing));
  });
}

void SchedulerCore::post(std::function<void()> job) {
  queue_.push_back(std::move(job));
  work_cv_.notify_one();
}

void SchedulerCore::finish_firing(TaskState& t, const FiringResult& result) {
  {
    std::lock_guard lock(mu_);
    t.running = false;
    t.status.running = false;
    const FiringRecord& r = result.record;
    t.status.last = r;
    if (r.outcome == FiringOutcome::ran || r.outcome == FiringOutcome::failed) {
      ++t.status.runs;
      t.status.last_fencing_token = r.fencing_token;
      if (r.outcome == FiringOutcome::failed) ++t.status.failures;
    } else {
      ++t.status.skips;
    }
    if (result.parked) {
      result.parked->task = &t;
      parked_.push_back(result.parked);
    }
    if (t.options.trigger.kind() == Trigger::Kind::fixed_delay)
      t.next_due_steady =
          saturating_add(clock_->now(), t.options.trigger.period() + draw_jitter(t.options));
    if (t.pending_catch_up && !stopping_) {
      Firing f = *t.pending_catch_up;
      t.pending_catch_up.reset();
      dispatch(t, f);
    }
    timer_cv_.notify_all();
    idle_cv_.notify_all();
  }
  const FiringRecord& r = result.record;
  const bool ran = r.outcome == FiringOutcome::ran || r.outcome == FiringOutcome::failed;
  publish(ran                                        ? EventKind::firing_finished
          : r.outcome == FiringOutcome::skipped_late ? EventKind::firing_misfired
                                                     : EventKind::firing_skipped,
          r);
  report(r);
}

void SchedulerCore::publish(EventKind kind, const FiringRecord& record, const LeaseInfo* lease) {
  if (!events_) return;
  ElectionEvent e{.kind = kind, .lock = record.task};
  if (lease) e.lease = *lease;
  e.lease.fencing_token = record.fencing_token;
  e.lease.slot = record.slot;
  e.started = record.started;
  e.detail = record.detail;
  e.firing = FiringEventInfo{
      .instant = record.instant, .catch_up = record.catch_up, .outcome = record.outcome};
  events_->publish(std::move(e));
}

void SchedulerCore::report(const FiringRecord& record) {
  if (!options_.listener) return;
  try {
    options_.listener->on_firing(record);
  } catch (...) {
    listener_errors_.fetch_add(1);
  }
}

void SchedulerCore::release_parked(const std::shared_ptr<Parked>& p) noexcept {
  if (p->guard) p->guard->release(p->failed, p->error);
}

void SchedulerCore::timer_loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    TimePoint now_s = clock_->now();
    WallTime now_w = wall_->now();
    TimePoint wake = saturating_add(now_s, kMaxSleep);
    for (auto& t : tasks_) wake = std::min(wake, visit(*t, now_s, now_w));
    for (auto it = parked_.begin(); it != parked_.end();) {
      if ((*it)->until <= now_s) {
        post([this, p = *it] { release_parked(p); });
        it = parked_.erase(it);
      } else {
        wake = std::min(wake, (*it)->until);
        ++it;
      }
    }
    clock_->wait_until(lock, timer_cv_, wake);
  }
}

void SchedulerCore::worker_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [this] { return !queue_.empty() || workers_exit_; });
    if (queue_.empty()) return;
    auto job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

void SchedulerCore::stop() {
  std::unique_lock lock(mu_);
  if (!started_ || workers_exit_) {
    stopping_ = true;
    return;
  }
  stopping_ = true;
  for (auto& t : tasks_) t->stop.request_stop();
  timer_cv_.notify_all();
  idle_cv_.notify_all();  // strategic holds wait on it
  lock.unlock();
  if (timer_.joinable()) timer_.join();
  lock.lock();
  const TimePoint deadline = saturating_add(clock_->now(), options_.stop_timeout);
  auto busy = [this] {
    return std::any_of(tasks_.begin(), tasks_.end(), [](const auto& t) { return t->running; });
  };
  while (busy() && clock_->now() < deadline) clock_->wait_until(lock, idle_cv_, deadline);
  // Lock holds end at their hold end, or at the deadline (a hold cut short: docs/scheduler.md).
  while (!parked_.empty()) {
    TimePoint now = clock_->now();
    std::vector<std::shared_ptr<Parked>> due;
    TimePoint next = deadline;
    for (auto it = parked_.begin(); it != parked_.end();) {
      if ((*it)->until <= now || now >= deadline) {
        due.push_back(*it);
        it = parked_.erase(it);
      } else {
        next = std::min(next, (*it)->until);
        ++it;
      }
    }
    lock.unlock();
    for (auto& p : due) release_parked(p);
    lock.lock();
    if (!parked_.empty()) clock_->wait_until(lock, idle_cv_, next);
  }
  workers_exit_ = true;
  work_cv_.notify_all();
  bool running = busy();
  lock.unlock();
  if (running) return;  // the destructor joins once the task returns
  for (auto& w : workers_)
    if (w.joinable()) w.join();
}

TaskStatus SchedulerCore::snapshot(const TaskState& t) const {
  TaskStatus s = t.status;
  if (t.options.trigger.kind() != Trigger::Kind::fixed_delay) {
    if (t.next_instant) s.next_firing = t.next_due_wall;
  } else if (t.scheduled && t.next_due_steady != TimePoint::max()) {
    s.next_firing = wall_->now() + (t.next_due_steady - clock_->now());
  }
  return s;
}

std::vector<TaskStatus> SchedulerCore::tasks() const {
  std::lock_guard lock(mu_);
  std::vector<TaskStatus> out;
  for (const auto& t : tasks_) out.push_back(snapshot(*t));
  return out;
}

std::optional<TaskStatus> SchedulerCore::task(std::string_view name) const {
  std::lock_guard lock(mu_);
  for (const auto& t : tasks_)
    if (t->options.name == name) return snapshot(*t);
  return std::nullopt;
}

}  // namespace detail

Scheduler::Scheduler(std::shared_ptr<LeaseStore> store, const SchedulerOptions& options)
    : Scheduler(LeaderElector(std::move(store), scheduled_election_options(),
                              ElectorHooks{.clock = options.clock}),
                options) {}

Scheduler::Scheduler(LeaderElector elector, SchedulerOptions options)
    : core_(std::make_shared<detail::SchedulerCore>(
          std::make_shared<const LeaderElector>(std::move(elector)), std::move(options))) {}

Scheduler::Scheduler(LeaderGroupElector elector, SchedulerOptions options)
    : core_(std::make_shared<detail::SchedulerCore>(
          std::make_shared<const LeaderGroupElector>(std::move(elector)), std::move(options))) {}

Scheduler::Scheduler(std::shared_ptr<StrategicElector> elector, SchedulerOptions options)
    : core_(std::make_shared<detail::SchedulerCore>(std::move(elector), std::move(options))) {}

Scheduler::~Scheduler() = default;

void Scheduler::schedule(TaskOptions options, Task task) {
  if (!task) throw InvalidArgument("task '" + options.name + "' has no function");
  core_->add(std::move(options),
             [fn = std::move(task)](LeaderContext& ctx, const FiringInfo&) { fn(ctx); });
}
void Scheduler::schedule(TaskOptions options, FiringTask task) {
  core_->add(std::move(options), std::move(task));
}
void Scheduler::start() { core_->start(); }
void Scheduler::stop() { core_->stop(); }
std::vector<TaskStatus> Scheduler::tasks() const { return core_->tasks(); }
std::optional<TaskStatus> Scheduler::task(std::string_view name) const { return core_->task(name); }
std::uint64_t Scheduler::listener_errors() const { return core_->listener_errors(); }

}  // namespace leader
