#pragma once
/// @file crontab.hpp
/// The crontab-like file of `leader cron --crontab FILE`: one job per line.
///
///   # comment (also after a job: no, a '#' inside the command is part of the command)
///   CRON_TZ=Europe/Berlin            applies to the jobs below it (TZ= too); default UTC
///   */5 * * * *  report   ./report.sh --daily     5 fields or a macro, the lock, the command
///   "*/10 * * * * *"  heartbeat  ./beat.sh         a 6-field (seconds) schedule is quoted
///
/// The command is the rest of the line, run with /bin/sh -c.

#include <string>
#include <vector>

namespace leader::cli {

/// One job of a crontab.
struct CrontabJob {
  int line = 0;
  std::string schedule{};
  std::string time_zone = "UTC";
  std::string lock{};
  std::string command{};  ///< for /bin/sh -c
};

/// Parses `text` (from `file`, used in messages). Throws UsageError("FILE:LINE: ...") naming the
/// first bad line: a bad schedule or time zone, a bad or repeated lock, a missing command.
std::vector<CrontabJob> parse_crontab(const std::string& text, const std::string& file);

}  // namespace leader::cli
