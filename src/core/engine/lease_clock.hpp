#pragma once
// Internal: the lease clock of one held lease: its local deadline and its renewal times, worked
// out from the send times and ttls of the requests made for it. A value: it reads no clock,
// takes no lock and does no I/O (HeldLease keeps one, guarded by its mutex).
//
// The deadline rule: `deadline()` is always a lower bound, minus the safety margin, of the
// lease's expiry on the server, whatever order the requests sent so far arrive in, including
// requests whose outcome is unknown (they may still land later). Renew calls of one lease are
// serialised, so only unknown-outcome requests can land out of order:
// - a grant of `g` confirmed for a request sent at `s` holds the lease until at least `s + g`;
// - a request for `t` whose outcome is unknown may land at any time after it was sent: before a
//   later confirmed request (which then overrides it), or after one, and then it holds the lease
//   until at least that request's send time + `t`. So every confirmed deadline counts
//   `min(g, t)` from its send time, `t` the smallest ttl of any unknown outcome so far, and an
//   unknown outcome sent at `u` bounds the current deadline by `u + t`.
// A store that granted less than asked (the grant cap) is assumed to grant no more to a request
// whose outcome is unknown.

#include <string>

#include "leader/time.hpp"

namespace leader::detail {

/// The safety margin rule of an elector: ElectionOptions::safety_margin and auto_extend.
struct MarginRule {
  Duration safety_margin{};  // the explicit margin; <= 0: a fifth of every grant
  bool auto_extend = false;

  /// The safety margin for a grant of `ttl`: the explicit one, or ttl / 5 by default.
  [[nodiscard]] Duration for_grant(Duration ttl) const {
    return safety_margin > Duration{0} ? safety_margin : ttl / 5;
  }
  /// Why an explicit margin cannot protect a grant of `ttl` (empty when it can): it must be
  /// shorter than the grant, and at most half of it with auto_extend (renewals run at a third).
  [[nodiscard]] std::string misfit(Duration ttl) const;
};

/// The deadline and renewal times of one held lease (see the rule above).
class LeaseClock {
 public:
  /// The ttl to judge a grant by: the requested one, or the store's shorter grant (ZooKeeper
  /// sessions can grant less than asked for; 0: the store did not say).
  [[nodiscard]] static Duration granted(Duration requested, Duration granted_ttl) {
    return granted_ttl > Duration{0} && granted_ttl < requested ? granted_ttl : requested;
  }

  /// Sets what the following renewals request (the lease time, then extend's).
  void request(Duration ttl) { ttl_ = ttl; }
  /// Records a request for `asked` sent before the first confirmed one whose outcome is unknown
  /// (a lost attempt of the acquire): it bounds every confirmed deadline by its ttl.
  void unknown_before(Duration asked);
  /// Records a confirmed grant of `granted_ttl` (as the store reported it) for a request for
  /// `asked` sent at `sent`: the deadline becomes `sent + t - margin`, t the grant bounded by
  /// every unknown outcome, and the next renewal is due a third of the grant after `sent`.
  void confirm(TimePoint sent, Duration asked, Duration granted_ttl, const MarginRule& rule);
  /// Records a request for `asked` sent at `sent` whose outcome is unknown (it may land later):
  /// the deadline is at most `sent + t - margin`, t the ask bounded by the grant cap.
  void unknown_outcome(TimePoint sent, Duration asked, const MarginRule& rule);
  /// Moves the next renewal to `now` + retry_after_failure() (a renewal failed at `now`).
  void retry_from(TimePoint now) { next_renew_ = now + retry_after_failure(); }
  /// How long to wait before retrying a failed renewal: a tenth of the ttl (bounded by the grant
  /// cap), within [10 ms, 1 s].
  [[nodiscard]] Duration retry_after_failure() const;
  /// Moves the next renewal by `by` (the scheduler's jitter).
  void shift_renewal(Duration by) { next_renew_ += by; }
  /// A fail-open lease (the store could not be asked): it never expires locally.
  void never_expire() { deadline_ = TimePoint::max(); }

  /// The local deadline: the lease is lost at or after it unless a renewal moved it.
  [[nodiscard]] TimePoint deadline() const { return deadline_; }
  /// True when the deadline has passed at `now`.
  [[nodiscard]] bool expired(TimePoint now) const { return now >= deadline_; }
  /// When the next renewal is due.
  [[nodiscard]] TimePoint next_renew() const { return next_renew_; }
  /// True when the next renewal is due at `now`.
  [[nodiscard]] bool renewal_due(TimePoint now) const { return now >= next_renew_; }
  /// The renewal period: a third of the last grant.
  [[nodiscard]] Duration renew_every() const { return renew_every_; }
  /// When the lease must be looked at next: its deadline, or its next renewal if earlier and
  /// `renews` (auto_extend and no renewal under way).
  [[nodiscard]] TimePoint next_due(bool renews) const {
    return renews && next_renew_ < deadline_ ? next_renew_ : deadline_;
  }
  /// What renewals request (request()).
  [[nodiscard]] Duration requested() const { return ttl_; }
  /// The ttl of the last confirmed grant as the store reported it (0: not reported).
  [[nodiscard]] Duration granted_ttl() const { return granted_ttl_; }
  /// When the request of the last confirmed grant was sent.
  [[nodiscard]] TimePoint sent_at() const { return sent_at_; }

 private:
  Duration ttl_{};
  Duration granted_ttl_{};
  TimePoint sent_at_{};
  TimePoint deadline_{};
  TimePoint next_renew_{};
  Duration renew_every_{};
  /// The smallest ttl a request with an unknown outcome may have set.
  Duration unknown_min_ttl_ = Duration::max();
  /// The smallest ttl the store granted when it granted less than asked.
  Duration grant_cap_ = Duration::max();
};

}  // namespace leader::detail
