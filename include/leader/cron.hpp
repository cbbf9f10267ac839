#pragma once
/// @file cron.hpp
/// Cron expressions (5 fields, or 6 with seconds first) evaluated in UTC or an IANA time zone.
///
/// Syntax: `*`, numbers, ranges `a-b`, steps `*/n`, `a-b/n`, `a/n`, lists `a,b-c`, month names
/// `jan`-`dec`, day names `sun`-`sat` (day of week 0-7, 0 and 7 are Sunday), `?` as `*` in the day
/// fields, and the macros `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily`
/// (`@midnight`), `@hourly`. `L`, `W`, `#` and `@reboot` are refused (InvalidArgument naming the
/// field). Day of month and day of week combine as in Vixie cron: when both are restricted (neither
/// starts with `*`), a day matches if either matches; otherwise both must match.
///
/// Daylight saving time (docs/scheduler.md): a local time that does not exist (the clock skips
/// it) fires once at the first instant after the gap (several such times coalesce into that one
/// firing); a local time that occurs twice (the clock repeats an hour) fires once, at its first
/// occurrence.

#include <bitset>
#include <optional>
#include <string>
#include <string_view>

#include "leader/store.hpp"

namespace leader {

/// A parsed cron expression bound to a time zone. Immutable; safe to share between threads.
class CronSchedule {
 public:
  /// Parses `expression` in `time_zone` ("UTC" or an IANA name such as "Europe/Berlin").
  /// Throws InvalidArgument naming the field and the rule for a bad expression, an unknown time
  /// zone, or an expression that never fires (e.g. `0 0 30 2 *`).
  static CronSchedule parse(std::string_view expression, std::string_view time_zone = "UTC");

  /// The first firing strictly after `after`, or nullopt when none comes within 30 years.
  [[nodiscard]] std::optional<WallTime> next_after(WallTime after) const;
  /// The expression as given.
  [[nodiscard]] const std::string& expression() const { return expression_; }
  /// The time zone's name.
  [[nodiscard]] const std::string& time_zone() const { return zone_name_; }
  /// True when the expression has a seconds field (6 fields).
  [[nodiscard]] bool has_seconds() const { return has_seconds_; }

 private:
  CronSchedule() = default;
  struct Fields {
    std::bitset<60> seconds, minutes;
    std::bitset<24> hours;
    std::bitset<32> days;     ///< 1..31
    std::bitset<13> months;   ///< 1..12
    std::bitset<7> weekdays;  ///< 0..6, Sunday = 0
    bool days_star = false, weekdays_star = false;
  };
  [[nodiscard]] bool day_matches(int year, unsigned month, unsigned day) const;

  std::string expression_;
  std::string zone_name_;
  const void* zone_ = nullptr;  ///< a date::time_zone*, owned by the tz database
  bool has_seconds_ = false;
  Fields f_;
};

}  // namespace leader
