// Cron parsing and next firings at fixed instants (no sleeping): fields, macros, names, Vixie's
// day-of-month / day-of-week rule, Feb 29, refusals, and DST gaps and repeats in Europe/Berlin and
// America/New_York.

#include "leader/cron.hpp"

#include <gtest/gtest.h>

#include <ctime>
#include <string>

#include "leader/errors.hpp"

namespace leader {
namespace {

// A UTC instant from calendar fields (timegm).
WallTime utc(int y, int mo, int d, int h = 0, int mi = 0, int s = 0) {
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

std::string show(std::optional<WallTime> t) {
  if (!t) return "never";
  std::time_t tt = std::chrono::system_clock::to_time_t(*t);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&tt));
  return buf;
}

std::string next(std::string_view expr, WallTime after, std::string_view zone = "UTC") {
  return show(CronSchedule::parse(expr, zone).next_after(after));
}

std::string refusal(std::string_view expr, std::string_view zone = "UTC") {
  try {
    (void)CronSchedule::parse(expr, zone);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "accepted";
}

TEST(Cron, FiveFieldsStepToTheNextMatchingMinute) {
  EXPECT_EQ(next("*/5 * * * *", utc(2024, 5, 1, 10, 2, 30)), "2024-05-01T10:05:00Z");
  EXPECT_EQ(next("*/5 * * * *", utc(2024, 5, 1, 10, 5, 0)), "2024-05-01T10:10:00Z");
  EXPECT_EQ(next("0 0 * * *", utc(2024, 12, 31, 23, 59, 59)), "2025-01-01T00:00:00Z");
}

TEST(Cron, SixFieldsHaveSecondsFirst) {
  EXPECT_EQ(next("*/10 * * * * *", utc(2024, 5, 1, 10, 0, 5)), "2024-05-01T10:00:10Z");
  EXPECT_EQ(next("* * * * * *", utc(2024, 5, 1, 10, 0, 59)), "2024-05-01T10:01:00Z");
  EXPECT_EQ(next("30 15 10 * * *", utc(2024, 5, 1, 10, 15, 30)), "2024-05-02T10:15:30Z");
  EXPECT_TRUE(CronSchedule::parse("* * * * * *").has_seconds());
  EXPECT_FALSE(CronSchedule::parse("* * * * *").has_seconds());
}

TEST(Cron, MacrosExpandToTheirFields) {
  WallTime t = utc(2024, 5, 15, 10, 30);  // a Wednesday
  EXPECT_EQ(next("@hourly", t), "2024-05-15T11:00:00Z");
  EXPECT_EQ(next("@daily", t), "2024-05-16T00:00:00Z");
  EXPECT_EQ(next("@midnight", t), "2024-05-16T00:00:00Z");
  EXPECT_EQ(next("@weekly", t), "2024-05-19T00:00:00Z");
  EXPECT_EQ(next("@monthly", t), "2024-06-01T00:00:00Z");
  EXPECT_EQ(next("@yearly", t), "2025-01-01T00:00:00Z");
  EXPECT_EQ(next("@ANNUALLY", t), "2025-01-01T00:00:00Z");
}

TEST(Cron, RangesStepsListsAndNames) {
  WallTime t = utc(2024, 5, 15, 10, 30);
  EXPECT_EQ(next("0 8-18/4,23 * * *", t), "2024-05-15T12:00:00Z");
  EXPECT_EQ(next("0 8-18/4,23 * * *", utc(2024, 5, 15, 16, 30)), "2024-05-15T23:00:00Z");
  EXPECT_EQ(next("5/20 * * * *", t), "2024-05-15T10:45:00Z");
  EXPECT_EQ(next("0 9 * jan-mar mon-fri", t), "2025-01-01T09:00:00Z");
  EXPECT_EQ(next("0 9 * JAN Mon", t), "2025-01-06T09:00:00Z");
  EXPECT_EQ(next("0 9 * * 7", t), "2024-05-19T09:00:00Z");  // 7 is Sunday
  EXPECT_EQ(next("0 9 * * sun", t), "2024-05-19T09:00:00Z");
  EXPECT_EQ(next("0 9 ? * 0", t), "2024-05-19T09:00:00Z");
}

TEST(Cron, Feb29FiresOnlyInLeapYears) {
  EXPECT_EQ(next("0 0 29 2 *", utc(2024, 3, 1)), "2028-02-29T00:00:00Z");
  EXPECT_EQ(next("0 0 29 2 *", utc(2096, 3, 1)), "2104-02-29T00:00:00Z");  // 2100 is no leap year
}

TEST(Cron, DayOfMonthOrDayOfWeekWhenBothAreRestricted) {
  // Vixie cron: 13th of the month OR any Friday.
  EXPECT_EQ(next("0 0 13 * 5", utc(2024, 5, 1)), "2024-05-03T00:00:00Z");   // Friday 3rd
  EXPECT_EQ(next("0 0 13 * 5", utc(2024, 5, 11)), "2024-05-13T00:00:00Z");  // Monday 13th
  // A field starting with '*' makes it AND: odd days that are Fridays.
  EXPECT_EQ(next("0 0 */2 * 5", utc(2024, 5, 1)), "2024-05-03T00:00:00Z");
  EXPECT_EQ(next("0 0 */2 * 5", utc(2024, 5, 4)), "2024-05-17T00:00:00Z");
  EXPECT_EQ(next("0 0 1 * *", utc(2024, 5, 4)), "2024-06-01T00:00:00Z");
}

TEST(Cron, RefusalsNameTheField) {
  EXPECT_NE(refusal("0 0 L * *").find("day of month field 'L'"), std::string::npos);
  EXPECT_NE(refusal("0 0 15W * *").find("day of month field '15W'"), std::string::npos);
  EXPECT_NE(refusal("0 0 * * 5L").find("day of week field '5L'"), std::string::npos);
  EXPECT_NE(refusal("0 0 * * 5#2").find("day of week field '5#2'"), std::string::npos);
  EXPECT_NE(refusal("0 0 LW * *").find("not supported"), std::string::npos);
  EXPECT_NE(refusal("61 * * * *").find("minute field '61' is out of range 0-59"),
            std::string::npos);
  EXPECT_NE(refusal("* 24 * * *").find("hour field"), std::string::npos);
  EXPECT_NE(refusal("* * * foo *").find("month field 'foo'"), std::string::npos);
  EXPECT_NE(refusal("*/0 * * * *").find("bad step"), std::string::npos);
  EXPECT_NE(refusal("5-1 * * * *").find("end is before its start"), std::string::npos);
  EXPECT_NE(refusal("* * * *").find("has 4 fields"), std::string::npos);
  EXPECT_NE(refusal("@reboot").find("@reboot is not supported"), std::string::npos);
  EXPECT_NE(refusal("0 0 30 2 *").find("never fires"), std::string::npos);
  EXPECT_NE(refusal("0 0 * * *", "Mars/Olympus").find("time zone 'Mars/Olympus'"),
            std::string::npos);
  EXPECT_EQ(refusal("0 0 * jul wed"), "accepted");  // l and w inside names are fine
}

TEST(Cron, BerlinSpringGapFiresOnceAtTheEndOfTheGap) {
  // 2024-03-31: 02:00 CET -> 03:00 CEST at 01:00 UTC; local 02:xx does not exist.
  const char* z = "Europe/Berlin";
  EXPECT_EQ(next("30 2 * * *", utc(2024, 3, 30, 2), z), "2024-03-31T01:00:00Z");
  EXPECT_EQ(next("30 2 * * *", utc(2024, 3, 31, 1), z), "2024-04-01T00:30:00Z");
  // Every quarter hour: 02:00, 02:15, 02:30, 02:45 and 03:00 coalesce into one firing.
  EXPECT_EQ(next("*/15 * * * *", utc(2024, 3, 31, 0, 50), z), "2024-03-31T01:00:00Z");
  EXPECT_EQ(next("*/15 * * * *", utc(2024, 3, 31, 1, 0), z), "2024-03-31T01:15:00Z");
  EXPECT_EQ(next("0 1 * * *", utc(2024, 3, 30, 12), z), "2024-03-31T00:00:00Z");
}

TEST(Cron, BerlinAutumnRepeatFiresOnceAtTheFirstOccurrence) {
  // 2024-10-27: 03:00 CEST -> 02:00 CET at 01:00 UTC; local 02:xx happens twice.
  const char* z = "Europe/Berlin";
  EXPECT_EQ(next("30 2 * * *", utc(2024, 10, 26, 12), z), "2024-10-27T00:30:00Z");
  EXPECT_EQ(next("30 2 * * *", utc(2024, 10, 27, 0, 30), z), "2024-10-28T01:30:00Z");
  EXPECT_EQ(next("0 * * * *", utc(2024, 10, 27, 0, 0), z), "2024-10-27T02:00:00Z");
  EXPECT_EQ(next("0 3 * * *", utc(2024, 10, 26, 12), z), "2024-10-27T02:00:00Z");
}

TEST(Cron, NewYorkTransitions) {
  const char* z = "America/New_York";
  // 2024-03-10: 02:00 EST -> 03:00 EDT at 07:00 UTC.
  EXPECT_EQ(next("30 2 * * *", utc(2024, 3, 9, 12), z), "2024-03-10T07:00:00Z");
  EXPECT_EQ(next("30 2 * * *", utc(2024, 3, 10, 7), z), "2024-03-11T06:30:00Z");
  // 2024-11-03: 02:00 EDT -> 01:00 EST at 06:00 UTC; local 01:xx happens twice.
  EXPECT_EQ(next("30 1 * * *", utc(2024, 11, 2, 12), z), "2024-11-03T05:30:00Z");
  EXPECT_EQ(next("30 1 * * *", utc(2024, 11, 3, 5, 30), z), "2024-11-04T06:30:00Z");
  EXPECT_EQ(next("0 9 * * *", utc(2024, 11, 3, 12), z), "2024-11-03T14:00:00Z");
}

TEST(Cron, SecondsAcrossTheGap) {
  // Every 20 s in Berlin: the last firing before the gap, then the gap's end.
  const char* z = "Europe/Berlin";
  EXPECT_EQ(next("*/20 * * * * *", utc(2024, 3, 31, 0, 59, 40), z), "2024-03-31T01:00:00Z");
  EXPECT_EQ(next("*/20 * * * * *", utc(2024, 3, 31, 1, 0, 0), z), "2024-03-31T01:00:20Z");
}

}  // namespace
}  // namespace leader
