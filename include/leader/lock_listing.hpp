#pragma once
/// @file lock_listing.hpp
/// Enumerating the held locks of a store, for operators (`leader list`). An optional capability,
/// not part of LeaseStore: electors never need it, and not every backend can do it cheaply.
/// Every store of the project implements LockLister as well (methods and costs: docs/cli.md); a
/// store that wraps another (validation, metrics) should implement it by calling
/// leader::list_locks() on the wrapped store.

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "leader/store.hpp"

namespace leader {

/// A store that can list its locks.
class LockLister {
 public:
  virtual ~LockLister() = default;
  /// Every lock with a live holder whose full name starts with `prefix` ("" = all; a tenant's
  /// locks: "tenant:acme:"), ordered by name, each with its holders as inspect() shows them
  /// (ordered by slot). A best-effort snapshot that never disturbs the holders.
  [[nodiscard]] virtual std::vector<LockState> list_locks(std::string_view prefix,
                                                          Deadline deadline) = 0;
};

/// `store`'s list_locks() when it is a LockLister; otherwise throws BackendError
/// failed_precondition "listing locks is not supported by the <scheme> store".
[[nodiscard]] std::vector<LockState> list_locks(LeaseStore& store, std::string_view prefix,
                                                Deadline deadline);

namespace detail {
/// For store implementations of LockLister: the locks among `names` (what the store found under
/// the listing prefix) that have a live holder, each as `store.inspect()` shows it, in name order.
/// Names that are not valid lock names are skipped: keys under the prefix the store did not write.
[[nodiscard]] std::vector<LockState> held_locks(LeaseStore& store,
                                                const std::set<std::string>& names,
                                                Deadline deadline);
}  // namespace detail

}  // namespace leader
