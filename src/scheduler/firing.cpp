// One firing on a worker thread: the window check, the task's lock, the task, and the lock hold
// that keeps slower replicas from running the same instant (docs/scheduler.md).

#include <exception>

#include "leader/errors.hpp"
#include "leader/uri.hpp"
#include "scheduler_core.hpp"

namespace leader::detail {
namespace {

Duration to_duration(WallTime::duration d) { return std::chrono::duration_cast<Duration>(d); }

// Runs the task; returns the exception text, or nullopt when it returned.
std::optional<std::string> run_task(const Scheduler::FiringTask& fn, LeaderContext& ctx,
                                    const FiringRecord& rec) {
  try {
    fn(ctx, FiringInfo{rec.task, rec.instant, rec.catch_up});
    return std::nullopt;
  } catch (const std::exception& e) {
    return std::string(e.what());
  } catch (...) {
    return std::string("unknown exception");
  }
}

FiringOutcome skip_outcome(SkipReason reason) {
  switch (reason) {
    case SkipReason::contention:
    case SkipReason::lease_lost:  // acquired, but lost before the action started
      return FiringOutcome::ran_elsewhere;
    case SkipReason::backend_error:
      return FiringOutcome::backend_error;
    case SkipReason::cancelled:
      return FiringOutcome::cancelled;
  }
  return FiringOutcome::ran_elsewhere;
}

}  // namespace

bool SchedulerCore::late(const Firing& f, WallTime at) const {
  return f.instant && at >= *f.instant + (f.catch_up ? f.catch_up_window : f.window);
}

TimePoint SchedulerCore::hold_end(const TaskState& t, const Firing& f, WallTime reply_w,
                                  TimePoint reply_s) const {
  if (!f.instant) {  // fixed_delay: the next run anywhere starts >= delay - allowance after this
    return saturating_add(clock_->now(), f.window);
  }
  // Held until our wall clock reads instant + window + skew: every other replica's lease for
  // this instant would have to be granted before then (its reply must come within the window by
  // its clock, at most max_clock_skew ahead of ours). A run_once task may also start a firing as
  // a catch-up until instant + catch_up_window, so each of its runs (on time or catch-up) keeps
  // the lock until instant + catch_up_window + skew = the next instant - skew - allowance: a
  // catch-up on another replica then finds it held, and each instant runs at most once.
  const Duration window =
      t.options.misfire == MisfirePolicy::run_once ? f.catch_up_window : f.window;
  WallTime end = *f.instant + window + options_.max_clock_skew;
  return saturating_add(reply_s, to_duration(end - reply_w));
}

FiringResult SchedulerCore::run_firing(TaskState& t, Firing f) {
  FiringRecord rec{.task = t.options.name, .instant = f.instant, .started = wall_->now()};
  auto done = [&](FiringOutcome outcome, std::string detail) {
    rec.outcome = outcome;
    rec.detail = std::move(detail);
    rec.finished = wall_->now();
    return FiringResult{rec, nullptr};
  };
  if (!f.instant) f.window = t.options.trigger.period() - options_.latency_allowance;
  std::string missed =
      f.missed > 0 ? "; " + std::to_string(f.missed) + " earlier instant(s) missed" : "";
  auto misfired = [&](std::string detail) {
    rec.catch_up = f.catch_up;
    return done(FiringOutcome::skipped_late, std::move(detail));
  };
  if (f.instant && f.window <= Duration{0})
    return misfired("the next instant is too close for max_clock_skew");
  if (!f.catch_up && (late(f, rec.started) || f.missed > 0)) {
    if (t.options.misfire == MisfirePolicy::skip && late(f, rec.started))
      return misfired("started " + format_duration(to_duration(rec.started - *f.instant)) +
                      " after its instant, past its window of " + format_duration(f.window) +
                      missed);
    if (t.options.misfire == MisfirePolicy::run_once) f.catch_up = true;
  }
  if (f.catch_up && late(f, rec.started))
    return misfired("catch-up started " + format_duration(to_duration(rec.started - *f.instant)) +
                    " after its instant, past its catch-up window of " +
                    format_duration(f.catch_up_window) + " (the next instant takes over)" + missed);
  rec.catch_up = f.catch_up;
  if (t.stop.stop_requested()) return done(FiringOutcome::cancelled, "the scheduler is stopping");
  Acquisition acq;
  try {
    acq = elector_->acquire(t.options.name, t.stop.get_token());
  } catch (const std::exception& e) {
    return done(FiringOutcome::backend_error, e.what());
  }
  WallTime reply_w = wall_->now();
  TimePoint reply_s = clock_->now();
  if (!acq) return done(skip_outcome(acq.skipped.reason), acq.skipped.detail + missed);
  LeaseGuard& guard = *acq.guard;
  if (late(f, reply_w)) {
    guard.release();
    return misfired("the lease came " + format_duration(to_duration(reply_w - *f.instant)) +
                    " after the instant, past its " + (f.catch_up ? "catch-up " : "") +
                    "window of " + format_duration(f.catch_up ? f.catch_up_window : f.window));
  }
  rec.fencing_token = guard.info().fencing_token;
  rec.slot = guard.info().slot;
  publish(EventKind::firing_started, rec, &guard.info());
  auto error = run_task(t.fn, guard.context(), rec);
  bool cancelled = error && t.stop.stop_requested();
  if (guard.context().stop_token().stop_requested() && !t.stop.stop_requested())
    missed += "; the lease was lost while it ran";
  FiringResult out = done(
      error ? (cancelled ? FiringOutcome::cancelled : FiringOutcome::failed) : FiringOutcome::ran,
      error.value_or("") + missed);
  TimePoint until = hold_end(t, f, reply_w, reply_s);
  std::lock_guard lock(mu_);
  if (until > clock_->now() && !stopping_) {
    out.parked = std::make_shared<Parked>(
        Parked{until, std::move(acq.guard), error.has_value(), error.value_or("")});
    return out;
  }
  guard.release(error.has_value(), error.value_or(""));
  return out;
}

}  // namespace leader::detail
