#pragma once
/// @file cron_command.hpp
/// `leader cron`: distributed cron. Every replica runs it as a long-lived process; each firing of
/// the schedule runs COMMAND on one replica, supervised as `leader run` supervises it.

#include <string>
#include <vector>

#include "leader/time.hpp"

namespace leader::cli {

/// The parsed options of `leader cron`.
struct CronOptions {
  std::string store;     ///< empty: $LEADER_STORE or the default SQLite file
  std::string schedule;  ///< one job: the cron expression
  std::string lock;      ///< one job: the lock name
  std::string time_zone = "UTC";
  std::string crontab;  ///< several jobs: the file
  Duration ttl = std::chrono::seconds(30);
  Duration grace = std::chrono::seconds(5);
  Duration max_clock_skew = std::chrono::seconds(2);
  bool run_once = false;  ///< misfire policy run_once instead of skip
  std::string node_id;    ///< empty: "<host>:<pid>"
  int verbosity = 0;      ///< -1 quiet, 0 normal, 1 verbose
  std::vector<std::string> command;
};

/// Runs `leader cron` until SIGTERM/SIGINT; returns the exit code (0 after a clean stop). Throws
/// UsageError (64) and StoreUnavailable (69).
int cron(const CronOptions& options);

}  // namespace leader::cli
