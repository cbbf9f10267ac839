#pragma once
/// @file supervise.hpp
/// The supervision of a running command group under a lease (`leader run`, `leader cron`).

#include <functional>
#include <stop_token>
#include <string>

#include "leader/time.hpp"
#include "log.hpp"
#include "process_group.hpp"
#include "run_options.hpp"

namespace leader::cli {

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
