#pragma once
// Internal: the shared state of one held lease, seen by the guard, the context and the renewal
// scheduler.
//
// The deadline rule: `local_deadline` is always a lower bound (minus the safety margin) of the
// lease's expiry on the server, whatever order the requests sent so far for this lease arrive
// in, including requests whose outcome is unknown (they may still land later). Store renew
// calls of one lease are serialised (`renewing`), so only unknown-outcome requests can land out
// of order; see confirm_locked() and unknown_outcome_locked().

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>

#include "leader/elector.hpp"

namespace leader::detail {

struct HeldLease {
  /// `opts`: the elector's options, shared (not copied: an acquisition copies no strings and
  /// computes no default node id for them).
  explicit HeldLease(std::shared_ptr<const ElectionOptions> opts)
      : options_owner(std::move(opts)), options(*options_owner) {}

  std::shared_ptr<const ElectionOptions> options_owner;  // keeps `options` alive
  const ElectionOptions& options;
  std::shared_ptr<LeaseStore> store;
  std::shared_ptr<Clock> clock;
  std::shared_ptr<ElectionListener> listener;
  std::shared_ptr<EventBus> bus;  // never null
  LeaseInfo info;
  bool fail_open = false;
  TimePoint replied_at{};  // when the acquire's reply came: min_lease_time counts from here
  std::stop_source stop;
  std::optional<std::stop_callback<std::function<void()>>> caller_link;
  std::stop_token caller;
  WallTime started{};  // when the lease was granted (system clock), for events and history
  /// Counts this lease among the holders of its lock in this process's wait queue (taken by a
  /// waiter: wait_queue.hpp) until the store release; reset after it.
  std::shared_ptr<void> local_hold;

  std::mutex mu;
  std::condition_variable cv;  // notified when `renewing`, `calling` or `lost` change
  Lease lease;                 // guarded by mu: the last confirmed grant
  Duration ttl{};              // guarded by mu: what renewals request (lease_time, then extend's)
  TimePoint local_deadline{};  // guarded by mu
  TimePoint next_renew{};      // guarded by mu
  Duration renew_every{};      // guarded by mu: a third of the last grant
  /// Guarded by mu: the smallest ttl a request with an unknown outcome may have set.
  Duration unknown_min_ttl = Duration::max();
  /// Guarded by mu: the smallest ttl the store granted when it granted less than asked.
  Duration grant_cap = Duration::max();
  bool renewing = false;  // guarded by mu: a renew (scheduled or extend) is queued or running
  bool calling = false;   // guarded by mu: that renew's store call is under way
  bool lost = false;      // guarded by mu
  bool finished = false;  // guarded by mu
  bool released = false;  // guarded by mu: finish() ran
  std::optional<LeaseOutcome> loss;  // guarded by mu: how the lease ended (lost: set at once)
  std::string loss_reason;           // guarded by mu: why it was lost

  /// Position in the scheduler's queue; guarded by the scheduler's own mutex.
  using ScheduleKey = std::pair<TimePoint, std::uint64_t>;
  std::optional<ScheduleKey> scheduled;

  /// The ttl to judge a grant by: the requested one, or the store's shorter grant (ZooKeeper
  /// sessions can grant less than asked for).
  [[nodiscard]] static Duration granted(Duration requested, const Lease& lease) {
    return lease.ttl > Duration{0} && lease.ttl < requested ? lease.ttl : requested;
  }
  /// The safety margin for a grant of `ttl`: the explicit one, or ttl / 5 by default.
  [[nodiscard]] Duration margin_for(Duration ttl) const;
  /// Records a confirmed grant of a request for `asked` sent at `sent`: the deadline becomes
  /// `sent + t - margin` with t the grant, bounded by every unknown-outcome request (one sent
  /// earlier can still land after this one: then it sets at least `sent + its ttl`).
  void confirm_locked(TimePoint sent, Duration asked, const Lease& granted_lease);
  /// Records a request for `asked` sent at `sent` whose outcome is unknown (it may land later).
  void unknown_outcome_locked(TimePoint sent, Duration asked);
  /// Why an explicit safety margin cannot protect a grant of `ttl` (empty when it can): it must be
  /// shorter than the grant, and at most half of it with auto_extend (renewals run at a third).
  [[nodiscard]] std::string margin_misfit(Duration ttl) const;
  /// When to retry after a failed renewal.
  [[nodiscard]] Duration retry_after_failure() const;
  /// Ends a renew call (scheduled or extend) of `copy`: applies its outcome (nullopt = unknown)
  /// and wakes whoever waits for the renew slot. Call without `mu` held. Returns why a confirmed
  /// grant is unsafe (margin_misfit), empty otherwise.
  std::string end_renewal(TimePoint sent, Duration asked, const Lease& copy,
                          std::optional<Renewal> outcome);
  /// Marks the lease lost once: fires the stop_token, emits on_lost and a `lost` event. Call
  /// without `mu` held.
  void mark_lost(const std::string& reason, LeaseOutcome outcome = LeaseOutcome::lost) noexcept;
  /// Publishes an event of `kind` about this lease (lease, started and deadline filled in).
  void publish(EventKind kind, std::string detail = {},
               std::optional<ErrorCode> code = std::nullopt) noexcept;
};

}  // namespace leader::detail
