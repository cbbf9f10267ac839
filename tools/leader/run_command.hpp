#pragma once
/// @file run_command.hpp
/// `leader run`: run a command only on the replica that holds the lock.

#include <functional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "leader/time.hpp"
#include "log.hpp"
#include "process_group.hpp"

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

/// The slack kept between the SIGKILL and the earliest server-side expiry.
inline constexpr Duration kKillSlack = std::chrono::seconds(1);

/// The --grace used when none is given: 5s, shortened to fit the lease (ttl / 2 - 1s, >= 0).
Duration default_grace_for(Duration ttl);

/// The lease's safety margin: max(ttl / 5, grace + kKillSlack). Throws UsageError when it exceeds
/// ttl / 2, i.e. when --grace cannot fit before the lease may expire on the store.
Duration safety_margin_for(Duration ttl, Duration grace);

/// Runs `leader run`; returns the exit code. Throws UsageError (64) and StoreFailure (69, 77, 78).
/// With --json / --json-file, writes the result object before returning or throwing.
int run(const RunOptions& options);

/// What supervise() needs to know about the lease.
struct LeaseWatch {
  std::stop_token lost;  ///< fires when the lease is lost or its local deadline passes
  std::string lock;
  std::function<std::string()> reason;  ///< why it was lost, when known
  std::function<TimePoint()> deadline;  ///< the local deadline after the last confirmed renewal
  /// `leader cron` is stopping: the group gets SIGTERM (SIGKILL after --grace) and the exit code
  /// is the command's own, not 75. Checked before `lost` (which fires on the same stop).
  std::stop_token shutdown{};
  /// Called when SIGINT or SIGTERM is forwarded to the group (`--restart` then stops).
  std::function<void()> on_stop_signal{};
};

/// Waits for the command group to finish while forwarding signals, feeding the keeper each new
/// local deadline, killing the group when the lease is lost (or the keeper reports that the
/// deadline passed) and SIGKILLing it --grace after a repeated SIGINT/SIGTERM; returns the exit
/// code (the command's status, 128+signal, or 75).
int supervise(CommandGroup& group, SignalChannel& signals, const LeaseWatch& lease,
              const RunOptions& options, const Log& log);
/// The same without a signal channel (`leader cron`: its main thread handles the signals).
int supervise(CommandGroup& group, SignalChannel* signals, const LeaseWatch& lease,
              const RunOptions& options, const Log& log);

}  // namespace leader::cli
