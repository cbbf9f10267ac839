#include "held_lease.hpp"

#include <algorithm>

namespace leader::detail {

Duration HeldLease::margin_for(Duration ttl) const {
  return options.safety_margin > Duration{0} ? options.safety_margin : ttl / 5;
}

void HeldLease::confirm_locked(TimePoint sent, Duration asked, const Lease& granted_lease) {
  lease = granted_lease;
  lease.sent_at = sent;
  const Duration g = granted(asked, lease);
  if (g < asked) grant_cap = std::min(grant_cap, g);
  const Duration bound = std::min(g, unknown_min_ttl);
  local_deadline = sent + bound - margin_for(bound);
  renew_every = g / 3;
  next_renew = sent + renew_every;
}

void HeldLease::unknown_outcome_locked(TimePoint sent, Duration asked) {
  const Duration t = std::min(asked, grant_cap);
  unknown_min_ttl = std::min(unknown_min_ttl, t);
  local_deadline = std::min(local_deadline, sent + t - margin_for(t));
}

Duration HeldLease::retry_after_failure() const {
  return std::clamp(std::min(ttl, grant_cap) / 10, Duration{10}, Duration{1000});
}

void HeldLease::end_renewal(TimePoint sent, Duration asked, const Lease& copy,
                            std::optional<LeaseStatus> status) {
  {
    std::lock_guard lock(mu);
    renewing = false;
    calling = false;
    if (status == LeaseStatus::ok) {
      if (!lost) confirm_locked(sent, asked, copy);
    } else if (!status) {
      unknown_outcome_locked(sent, asked);
      next_renew = clock->now() + retry_after_failure();
    }
  }
  cv.notify_all();
}

}  // namespace leader::detail
