#include "lease_clock.hpp"

#include <algorithm>

#include "leader/uri.hpp"

namespace leader::detail {

std::string MarginRule::misfit(Duration ttl) const {
  const Duration m = safety_margin;
  if (m <= Duration{0}) return {};  // the default margin is a fifth of every grant
  if (m >= ttl)
    return "safety_margin " + format_duration(m) + " is not shorter than the granted ttl " +
           format_duration(ttl);
  if (auto_extend && m > ttl / 2)
    return "safety_margin " + format_duration(m) + " is more than half the granted ttl " +
           format_duration(ttl) + ", so auto_extend's renewals (at a third of it) do not fit";
  return {};
}

void LeaseClock::unknown_before(Duration asked) {
  unknown_min_ttl_ = std::min(unknown_min_ttl_, asked);
}

void LeaseClock::confirm(TimePoint sent, Duration asked, Duration granted_ttl,
                         const MarginRule& rule) {
  granted_ttl_ = granted_ttl;
  sent_at_ = sent;
  const Duration g = granted(asked, granted_ttl);
  if (g < asked) grant_cap_ = std::min(grant_cap_, g);
  const Duration bound = std::min(g, unknown_min_ttl_);
  deadline_ = sent + bound - rule.for_grant(bound);
  renew_every_ = g / 3;
  next_renew_ = sent + renew_every_;
}

void LeaseClock::unknown_outcome(TimePoint sent, Duration asked, const MarginRule& rule) {
  const Duration t = std::min(asked, grant_cap_);
  unknown_min_ttl_ = std::min(unknown_min_ttl_, t);
  deadline_ = std::min(deadline_, sent + t - rule.for_grant(t));
}

Duration LeaseClock::retry_after_failure() const {
  return std::clamp(std::min(ttl_, grant_cap_) / 10, Duration{10}, Duration{1000});
}

}  // namespace leader::detail
