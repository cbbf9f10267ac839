#pragma once
// Internal: the renewal scheduler. One per clock (one per process for the real clock): a timer
// thread that fires stop_tokens at local deadlines (no I/O on it) and renewal workers per store
// (store_lanes.hpp) that send renewals, so one slow store call never delays another lease's
// deadline, and a store whose calls hang never delays another store's renewals.

#include <memory>

#include "held_lease.hpp"

namespace leader::detail {

class RenewalScheduler {
 public:
  /// The scheduler of `clock` (created on first use, lives until process exit).
  static RenewalScheduler& for_clock(const std::shared_ptr<Clock>& clock);
  virtual ~RenewalScheduler() = default;
  /// Starts watching `held`: its local deadline, and renewals at lease/3 with auto_extend.
  virtual void watch(const std::shared_ptr<HeldLease>& held) = 0;
  /// Re-reads `held`'s times after an explicit extend().
  virtual void reschedule(const std::shared_ptr<HeldLease>& held) = 0;
  /// Stops watching `held`. The caller first set `held.finished` and waited for its in-flight
  /// renewal call (`!renewal.calling()`), both under `held.mu` (ElectionCore::finish, in the same
  /// lock as its other end-of-lease reads).
  virtual void unwatch(HeldLease& held) = 0;
};

}  // namespace leader::detail
