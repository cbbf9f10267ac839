#pragma once
/// @file events.hpp
/// Election listeners and history sinks.
///
/// Threads: on_elected, on_revoked and on_skipped run on the thread that called run_if_leader;
/// on_lost runs on the renewal scheduler's thread (or the thread that called extend()) and must
/// not block. Listener exceptions are caught and ignored.

#include <exception>
#include <string>

#include "leader/result.hpp"
#include "leader/store.hpp"

namespace leader {

/// Receives election events. Override what you need.
class ElectionListener {
 public:
  virtual ~ElectionListener() = default;
  /// The lease was acquired; the action is about to run.
  virtual void on_elected(const LeaseInfo& /*lease*/) {}
  /// The action finished and the lease was released (or left to expire after min_lease_time).
  virtual void on_revoked(const LeaseInfo& /*lease*/) {}
  /// The action did not run.
  virtual void on_skipped(const std::string& /*lock*/, const Skipped& /*why*/) {}
  /// The lease was lost while the action ran; its stop_token has fired.
  virtual void on_lost(const LeaseInfo& /*lease*/, const std::string& /*reason*/) {}
};

/// One entry of the election history.
struct HistoryRecord {
  enum class Kind { acquired, completed, failed };
  Kind kind = Kind::acquired;
  LeaseInfo lease{};
  WallTime at{};
  Duration elapsed{};  ///< for completed and failed: how long the action ran
  std::string error;   ///< for failed: the exception's what()
};

/// Receives history records (e.g. to write an audit table). Must be thread-safe.
class HistorySink {
 public:
  virtual ~HistorySink() = default;
  virtual void record(const HistoryRecord& record) = 0;
};

}  // namespace leader
