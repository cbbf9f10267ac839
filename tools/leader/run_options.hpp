#pragma once
/// @file run_options.hpp
/// The options of `leader run`: their CLI definition, and the rules they must keep together
/// (--grace must fit --ttl, --restart needs --wait forever, ...). Every check throws UsageError.

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "leader/time.hpp"
#include "subcommand.hpp"

namespace leader::cli {

/// What `leader run --wait forever` does when COMMAND exits while the lease is held.
enum class Restart {
  never,       ///< step down: release the lock and exit with COMMAND's code
  on_failure,  ///< run COMMAND again under the same lease when it exited non-zero
  always,      ///< run COMMAND again under the same lease whatever its exit code
};

/// "never", "on-failure", "always" -> Restart; UsageError otherwise.
Restart restart_policy(std::string_view text);

/// The parsed options of `leader run`.
struct RunOptions {
  std::string store;  ///< empty: $LEADER_STORE or the default SQLite file
  std::string lock;
  Duration ttl = std::chrono::seconds(30);
  Duration wait = Duration{0};
  /// --wait forever: wait for the lock until elected (hot standby); after a lost lease, campaign
  /// again unless --restart never.
  bool wait_forever = false;
  Restart restart = Restart::never;  ///< --restart, with --wait forever only
  Duration min_hold = Duration{0};
  int slots = 0;  ///< 0: single leader; N: one of N slots
  Duration grace = std::chrono::seconds(5);
  int skip_exit_code = 0;
  std::string node_id;    ///< empty: "<host>:<pid>"
  int verbosity = 0;      ///< -1 quiet, 0 normal, 1 verbose
  bool json = false;      ///< --json: the result object on stdout
  std::string json_file;  ///< --json-file: the result object in this file instead
  std::vector<std::string> command;
};

/// Adds the `run` subcommand to `app`; its run() converts the options and calls run().
Subcommand add_run_command(CLI::App& app);

/// The slack kept between the SIGKILL and the earliest server-side expiry.
inline constexpr Duration kKillSlack = std::chrono::seconds(1);

/// The --grace used when none is given: 5s, shortened to fit the lease (ttl / 2 - 1s, >= 0).
Duration default_grace_for(Duration ttl);

/// The lease's safety margin: max(ttl / 5, grace + kKillSlack). Throws UsageError when it exceeds
/// ttl / 2, i.e. when --grace cannot fit before the lease may expire on the store.
Duration safety_margin_for(Duration ttl, Duration grace);

/// Checks the options against each other: the lock name, --ttl, --min-hold, COMMAND, --restart
/// and --grace.
void check_run_options(const RunOptions& options);

}  // namespace leader::cli
