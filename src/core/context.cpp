#include "leader/context.hpp"

#include "held_lease.hpp"
#include "renewal.hpp"

namespace leader {

const std::string& LeaderContext::lock_name() const { return held_->info.lock; }
std::uint64_t LeaderContext::fencing_token() const { return held_->info.fencing_token; }
int LeaderContext::slot() const { return held_->info.slot; }
const std::string& LeaderContext::node_id() const { return held_->info.node_id; }
std::stop_token LeaderContext::stop_token() const { return held_->stop.get_token(); }
const LeaseInfo& LeaderContext::lease() const { return held_->info; }

TimePoint LeaderContext::deadline() const {
  std::lock_guard lock(held_->mu);
  return held_->local_deadline;
}

bool LeaderContext::still_leader() const {
  if (held_->stop.stop_requested()) return false;
  std::lock_guard lock(held_->mu);
  return !held_->lost && held_->clock->now() < held_->local_deadline;
}

bool LeaderContext::extend(Duration lease_time) {
  if (lease_time <= Duration{0}) throw InvalidArgument("extend: lease_time must be > 0");
  auto& h = *held_;
  if (h.fail_open) return true;
  Lease copy;
  {
    std::lock_guard lock(h.mu);
    if (h.lost || h.finished) return false;
    copy = h.lease;
    ++h.renewals_in_flight;
    ++h.renewals_running;
  }
  const TimePoint sent = h.clock->now();
  std::optional<LeaseStatus> status;
  try {
    status = h.store->renew(copy, lease_time, Deadline::after(h.options.effective_call_timeout()));
  } catch (...) {
    {
      std::lock_guard lock(h.mu);
      --h.renewals_in_flight;
      --h.renewals_running;
    }
    h.cv.notify_all();
    throw;
  }
  {
    std::lock_guard lock(h.mu);
    --h.renewals_in_flight;
    --h.renewals_running;
    if (status == LeaseStatus::ok && !h.lost) {
      copy.sent_at = sent;
      h.lease = copy;
      h.local_deadline = h.deadline_after(sent, detail::HeldLease::granted(lease_time, copy));
    }
  }
  h.cv.notify_all();
  if (status != LeaseStatus::ok) {
    h.mark_lost("extend refused: the lease was taken over or expired on the server");
    return false;
  }
  detail::RenewalScheduler::for_clock(h.clock).reschedule(held_);
  return true;
}

}  // namespace leader
