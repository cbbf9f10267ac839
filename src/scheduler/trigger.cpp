// Wall clocks, triggers and option checks of the Scheduler.

#include <memory>

#include "leader/errors.hpp"
#include "leader/options.hpp"
#include "leader/scheduler.hpp"
#include "leader/uri.hpp"

namespace leader {
namespace {

class SystemWallClock final : public WallClock {
 public:
  WallTime now() const override { return std::chrono::system_clock::now(); }
};

class FollowingWallClock final : public WallClock {
 public:
  FollowingWallClock(std::shared_ptr<Clock> steady, WallTime origin)
      : steady_(std::move(steady)), origin_(origin), steady_origin_(steady_->now()) {}
  WallTime now() const override {
    return origin_ +
           std::chrono::duration_cast<WallTime::duration>(steady_->now() - steady_origin_);
  }

 private:
  std::shared_ptr<Clock> steady_;
  WallTime origin_;
  TimePoint steady_origin_;
};

}  // namespace

std::shared_ptr<WallClock> WallClock::system() {
  static const std::shared_ptr<WallClock> clock = std::make_shared<SystemWallClock>();
  return clock;
}

std::shared_ptr<WallClock> WallClock::following(std::shared_ptr<Clock> steady, WallTime origin) {
  if (!steady) throw InvalidArgument("WallClock::following needs a steady clock");
  return std::make_shared<FollowingWallClock>(std::move(steady), origin);
}

Trigger Trigger::cron(std::string_view expression, std::string_view time_zone) {
  Trigger t;
  t.kind_ = Kind::cron;
  t.cron_ = std::make_shared<const CronSchedule>(CronSchedule::parse(expression, time_zone));
  return t;
}

Trigger Trigger::fixed_rate(Duration period) {
  if (period <= Duration{0}) throw InvalidArgument("Trigger::fixed_rate period must be > 0");
  check_duration_bound("Trigger", "fixed_rate period", period);
  Trigger t;
  t.kind_ = Kind::fixed_rate;
  t.period_ = period;
  return t;
}

Trigger Trigger::fixed_delay(Duration delay) {
  if (delay <= Duration{0}) throw InvalidArgument("Trigger::fixed_delay delay must be > 0");
  check_duration_bound("Trigger", "fixed_delay delay", delay);
  Trigger t;
  t.kind_ = Kind::fixed_delay;
  t.period_ = delay;
  return t;
}

std::optional<WallTime> Trigger::next_after(WallTime after) const {
  switch (kind_) {
    case Kind::cron:
      return cron_->next_after(after);
    case Kind::fixed_rate: {
      auto since = std::chrono::duration_cast<Duration>(after.time_since_epoch());
      auto k = since.count() >= 0 ? since / period_ : (since - period_ + Duration{1}) / period_;
      return WallTime{} + std::chrono::duration_cast<WallTime::duration>((k + 1) * period_);
    }
    case Kind::fixed_delay:
      break;
  }
  return std::nullopt;
}

std::string Trigger::describe() const {
  switch (kind_) {
    case Kind::cron:
      return "cron '" + cron_->expression() + "' (" + cron_->time_zone() + ")";
    case Kind::fixed_rate:
      return "every " + format_duration(period_);
    case Kind::fixed_delay:
      return format_duration(period_) + " after each run";
  }
  return {};
}

void SchedulerOptions::validate() const {
  auto check = [](const char* field, Duration value, bool allow_zero) {
    if (value < Duration{0} || (!allow_zero && value == Duration{0}))
      throw InvalidArgument(std::string("SchedulerOptions.") + field + " = " +
                            format_duration(value) + " breaks the rule: " + field +
                            (allow_zero ? " >= 0" : " > 0"));
    check_duration_bound("SchedulerOptions", field, value);
  };
  check("max_clock_skew", max_clock_skew, true);
  check("latency_allowance", latency_allowance, true);
  check("misfire_threshold", misfire_threshold, false);
  check("stop_timeout", stop_timeout, true);
  if (max_concurrent < 1)
    throw InvalidArgument("SchedulerOptions.max_concurrent = " + std::to_string(max_concurrent) +
                          " breaks the rule: max_concurrent >= 1");
}

ElectionOptions scheduled_election_options() {
  return ElectionOptions{.wait_time = Duration{0}, .auto_extend = true};
}

}  // namespace leader
