#pragma once
/// @file lock_watching.hpp
/// Waiting for a lock's record to change, for observers (observe_lock, `leader observe`). An
/// optional capability beside LeaseStore, as LockLister is: electors never need it, and not every
/// backend can do it. Stores without it are polled. Which stores watch: docs/campaign.md.

#include <stop_token>
#include <string_view>

#include "leader/store.hpp"

namespace leader {

/// True when two snapshots of a lock name the same holders (owner token, fencing token, slot).
[[nodiscard]] bool same_holders(const LockState& a, const LockState& b) noexcept;

/// A store that can block until a lock's record changes.
class LockWatcher {
 public:
  virtual ~LockWatcher() = default;
  /// Blocks until `lock`'s holders (owner, fencing token, slot) differ from `last_seen`, until
  /// `deadline` passes or until `stop` is requested, and returns the lock as inspect() shows it
  /// then (possibly still equal to `last_seen`: callers compare). A lease that merely times out
  /// on the server may change no record on some stores: callers keep re-reading at the holders'
  /// expiry. Throws BackendError as inspect() does; InvalidArgument for a bad lock name.
  [[nodiscard]] virtual LockState watch(std::string_view lock, const LockState& last_seen,
                                        Deadline deadline, const std::stop_token& stop) = 0;
};

/// `store`'s watch (its capabilities().watch), or nullptr when it has none (it is then polled).
/// A wrapper (leader::open()'s validating store, Metrics::instrument) reports the wrapped
/// store's watch, which checks its own arguments.
[[nodiscard]] inline LockWatcher* lock_watcher(LeaseStore& store) noexcept {
  return store.capabilities().watch;
}

}  // namespace leader
