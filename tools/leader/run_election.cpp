// The elector of `leader run` (run_election.hpp).

#include "run_election.hpp"

#include <algorithm>
#include <chrono>

#include "exit_codes.hpp"
#include "leader/errors.hpp"
#include "leader/uri.hpp"

namespace leader::cli {

void LostReason::on_lost(const LeaseInfo& /*lease*/, const std::string& reason) {
  std::lock_guard lock(mu_);
  reason_ = reason;
}

void LostReason::on_renew_failed(const std::string& error) {
  std::lock_guard lock(mu_);
  last_renew_error_ = error;
}

std::string LostReason::get() const {
  std::lock_guard lock(mu_);
  if (last_renew_error_.empty() || reason_.find(last_renew_error_) != std::string::npos)
    return reason_;
  return reason_ + (reason_.empty() ? "" : "; ") + "last renewal error: " + last_renew_error_;
}

Election::Election(std::shared_ptr<LeaseStore> store, const RunOptions& o) {
  // --wait forever: one attempt at a time, run_once() pauses between them (standby_pause).
  ElectionOptions e{.wait_time = o.wait_forever ? Duration{0} : o.wait,
                    .lease_time = o.ttl,
                    .min_lease_time = o.min_hold,
                    .auto_extend = true,
                    .safety_margin = safety_margin_for(o.ttl, o.grace)};
  if (!o.node_id.empty()) e.node_id = o.node_id;
  ElectorHooks hooks;
  hooks.listener = lost_;
  try {
    if (o.slots > 0) {
      group_.emplace(std::move(store), GroupOptions{.election = e, .max_leaders = o.slots}, hooks);
    } else {
      single_.emplace(std::move(store), e, hooks);
    }
  } catch (const InvalidArgument& err) {
    throw UsageError(err.what());
  }
}

const Elector& Election::elector() const {
  if (group_) return *group_;
  return *single_;
}

AcquireOutcome Election::acquire(const RunOptions& o, SignalChannel& signals) const {
  AcquireOutcome outcome;
  try {
    outcome = acquire_interruptibly(o.lock, signals);
  } catch (const GrantTooShort& e) {
    // The elector refuses (and releases) a lease whose granted ttl cannot hold the margin --grace
    // needs: a configuration error of this command line, like --grace against --ttl.
    throw UsageError(
        "--grace " + format_duration(o.grace) +
        " does not fit in the ttl the store granted (asked --ttl " + format_duration(o.ttl) +
        "; --grace + 1s must be at most half the granted ttl); the lock was released: " + e.what());
  } catch (const BackendError& e) {
    throw store_failure("store failed while acquiring '" + o.lock + "'", e);
  } catch (const InvalidArgument& e) {
    throw UsageError(e.what());
  }
  return outcome;
}

// Acquires while SIGINT/SIGTERM/SIGHUP stop the wait.
AcquireOutcome Election::acquire_interruptibly(const std::string& lock,
                                               SignalChannel& signals) const {
  std::stop_source stop;
  SignalStop on_signal(signals, stop);
  AcquireOutcome out;
  out.acquisition = elector().acquire(lock, stop.get_token());
  out.signal = on_signal.finish();
  return out;
}

std::optional<LockState> Election::inspect(const std::string& lock) const {
  try {
    return elector().inspect(lock);
  } catch (const std::exception&) {
    return std::nullopt;  // best effort: the caller falls back to what the elector said
  }
}

std::string describe_holders(const std::optional<LockState>& state, const std::string& fallback) {
  std::string out;
  if (state) {
    for (const Holder& h : state->holders) {
      auto left = std::chrono::ceil<std::chrono::seconds>(h.expires_in).count();
      out += out.empty() ? "" : ", ";
      out += h.node_id + " (token " + std::to_string(h.fencing_token) + ", " +
             std::to_string(std::max<std::int64_t>(left, 0)) + " s left)";
    }
  }
  return out.empty() ? (fallback.empty() ? "another replica" : fallback) : out;
}

Subscription Election::log_renewal_failures(const Log& log) const {
  return elector().events().subscribe(
      [lost = lost_, log](const ElectionEvent& e) {
        std::string error =
            (e.error_code ? std::string(to_string(*e.error_code)) + ": " : "") + e.detail;
        lost->on_renew_failed(error);
        log.warning("renewing the lease on '" + e.lock + "' failed (" + error +
                    "); retrying until the local deadline");
      },
      {.kinds = {EventKind::renew_failed}});
}

}  // namespace leader::cli
