#pragma once
/// @file context.hpp
/// LeaderContext: what the action sees of its lease.

#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

#include "leader/result.hpp"
#include "leader/time.hpp"

namespace leader {
namespace detail {
struct HeldLease;
}
class LeaseGuard;

/// Handed to the action while it holds the lease. Valid only during the action; safe to use from
/// threads the action starts while it runs.
class LeaderContext {
 public:
  explicit LeaderContext(std::shared_ptr<detail::HeldLease> held) : held_(std::move(held)) {}

  /// The full lock name (tenant prefix included).
  [[nodiscard]] const std::string& lock_name() const;
  /// Strictly increasing per lock; pass it to the protected resource to reject stale writers.
  [[nodiscard]] std::uint64_t fencing_token() const;
  /// The slot index of a group lease; 0 for a single lease.
  [[nodiscard]] int slot() const;
  /// This replica's node id.
  [[nodiscard]] const std::string& node_id() const;
  /// Fires when the lease is lost, about to expire locally, or the caller cancels.
  [[nodiscard]] std::stop_token stop_token() const;
  /// Local steady time after which the lease must be assumed lost (send time of the last
  /// confirmed acquire/renew + its granted ttl - safety margin, lowered by any request whose
  /// outcome is unknown; docs/design.md "The deadline rule").
  [[nodiscard]] TimePoint deadline() const;
  /// Renews the lease now to `lease_time` from now (shorter or longer than the lease), and makes
  /// every later auto_extend renewal ask for `lease_time` too. Waits for a renewal in flight.
  /// Returns false (and the stop_token fires) when the lease was already lost. Throws
  /// InvalidArgument for `lease_time` <= 0, > 365 days, or one an explicit safety margin does not
  /// fit; BackendError when the store fails (the deadline is then bounded by this request too)
  /// or, with failed_precondition, when it granted less than the margin fits (the stop fires).
  bool extend(Duration lease_time);
  /// True while the lease is held and its local deadline has not passed.
  [[nodiscard]] bool still_leader() const;
  /// The lease as reported in results.
  [[nodiscard]] const LeaseInfo& lease() const;

 private:
  friend class LeaseGuard;  // ends the lease it guards through held_
  std::shared_ptr<detail::HeldLease> held_;
};

}  // namespace leader
