#include "leader/context.hpp"

#include "held_lease.hpp"
#include "leader/uri.hpp"
#include "renewal.hpp"

namespace leader {

const std::string& LeaderContext::lock_name() const { return held_->info.lock; }
std::uint64_t LeaderContext::fencing_token() const { return held_->info.fencing_token; }
int LeaderContext::slot() const { return held_->info.slot; }
const std::string& LeaderContext::node_id() const { return held_->info.node_id; }
std::stop_token LeaderContext::stop_token() const { return held_->stop_token(); }
const LeaseInfo& LeaderContext::lease() const { return held_->info; }

TimePoint LeaderContext::deadline() const {
  std::lock_guard lock(held_->mu);
  return held_->clock_.deadline();
}

bool LeaderContext::still_leader() const {
  if (held_->stop_requested()) return false;
  std::lock_guard lock(held_->mu);
  return !held_->lost && !held_->clock_.expired(held_->clock().now());
}

bool LeaderContext::extend(Duration lease_time) {
  if (lease_time <= Duration{0}) throw InvalidArgument("extend: lease_time must be > 0");
  check_duration_bound("LeaderContext", "extend(lease_time)", lease_time);
  auto& h = *held_;
  if (h.fail_open) return true;
  if (auto misfit = h.margin_rule().misfit(lease_time); !misfit.empty())
    throw InvalidArgument("extend(" + format_duration(lease_time) + ") on lock '" + h.info.lock +
                          "': " + misfit);
  Lease copy;
  {
    std::unique_lock lock(h.mu);
    // One renew call per lease at a time, so replies cannot be applied out of order.
    h.cv().wait(lock, [&] { return !h.renewal.taken() || h.lost || h.finished; });
    if (h.lost || h.finished) return false;
    h.renewal.take_and_call();
    h.clock_.request(lease_time);  // later renewals request this ttl too
    copy = h.store_lease_locked();
  }
  const TimePoint sent = h.clock().now();
  std::optional<Renewal> outcome;
  // A failed call may still land: the clock stays bound by it; then the next renewal is due.
  const auto failed = [&](std::string what, std::optional<ErrorCode> code) {
    h.end_renewal(sent, lease_time, std::nullopt);
    h.publish(EventKind::renew_failed, std::move(what), code);
    detail::RenewalScheduler::for_clock(h.core->clock()).reschedule(held_);
  };
  try {
    outcome =
        h.store()->renew(copy, lease_time, Deadline::after(h.options().effective_call_timeout()));
  } catch (const BackendError& e) {
    failed(e.what(), e.code());
    throw;
  } catch (const std::exception& e) {
    failed(e.what(), std::nullopt);
    throw;
  } catch (...) {
    failed("renew threw a non-standard exception", std::nullopt);
    throw;
  }
  std::string misfit = h.end_renewal(sent, lease_time, outcome);
  if (!misfit.empty()) {
    h.mark_lost(misfit);
    throw BackendError(ErrorCode::failed_precondition, std::string(h.store()->scheme()), misfit);
  }
  if (outcome->status != LeaseStatus::ok) {
    h.mark_lost("extend refused: the lease was taken over or expired on the server");
    return false;
  }
  detail::RenewalScheduler::for_clock(h.core->clock()).reschedule(held_);
  return true;
}

}  // namespace leader
