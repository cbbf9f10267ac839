#pragma once
/// @file run_election.hpp
/// The elector of `leader run`: a LeaderElector, or a LeaderGroupElector with --slots, built from
/// the options; the acquire that SIGINT/SIGTERM/SIGHUP interrupt; and why a lease was lost.

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "leader/elector.hpp"
#include "leader/group.hpp"
#include "log.hpp"
#include "process_group.hpp"
#include "run_options.hpp"

namespace leader::cli {

/// Why the lease was lost (on_lost runs on the renewal thread) and the last renewal error before
/// it (renew_failed events, delivered on the event bus's thread), so that the loss is logged with
/// its cause.
class LostReason : public ElectionListener {
 public:
  void on_lost(const LeaseInfo& lease, const std::string& reason) override;
  void on_renew_failed(const std::string& error);
  /// The reason, with the last renewal error when the reason does not already say it.
  [[nodiscard]] std::string get() const;

 private:
  mutable std::mutex mu_;
  std::string reason_;
  std::string last_renew_error_;
};

/// The holders of `state` for messages: "web-2 (token 41, 23 s left)", several joined by ", ";
/// `fallback` when there are none.
std::string describe_holders(const std::optional<LockState>& state, const std::string& fallback);

/// The outcome of waiting for the lease: the acquisition, or the signal that interrupted it.
struct AcquireOutcome {
  Acquisition acquisition;
  int signal = 0;
};

/// The elector of this run: single leader, or one of N slots.
class Election {
 public:
  /// Throws UsageError for options the elector refuses.
  Election(std::shared_ptr<LeaseStore> store, const RunOptions& o);

  /// Waits for --lock (--wait, or one attempt with --wait forever) until SIGINT, SIGTERM or
  /// SIGHUP arrives on `signals`. Store errors become StoreFailure, bad arguments UsageError.
  [[nodiscard]] AcquireOutcome acquire(const RunOptions& o, SignalChannel& signals) const;
  /// Who holds `lock` as the store lists them; nullopt when the store cannot say (best effort).
  [[nodiscard]] std::optional<LockState> inspect(const std::string& lock) const;
  /// Logs every failed renewal as a warning (the cause of a later loss) and remembers it.
  [[nodiscard]] Subscription log_renewal_failures(const Log& log) const;
  /// Why the lease was lost, when known.
  [[nodiscard]] const std::shared_ptr<LostReason>& lost() const { return lost_; }

 private:
  [[nodiscard]] const Elector& elector() const;
  [[nodiscard]] AcquireOutcome acquire_interruptibly(const std::string& lock,
                                                     SignalChannel& signals) const;

  std::optional<LeaderElector> single_;
  std::optional<LeaderGroupElector> group_;
  std::shared_ptr<LostReason> lost_ = std::make_shared<LostReason>();
};

}  // namespace leader::cli
