#include "leader/lock_listing.hpp"

#include <string>

#include "leader/errors.hpp"

namespace leader {

std::vector<LockState> list_locks(LeaseStore& store, std::string_view prefix, Deadline deadline) {
  if (auto* lister = dynamic_cast<LockLister*>(&store)) return lister->list_locks(prefix, deadline);
  const std::string scheme(store.scheme());
  throw BackendError(ErrorCode::failed_precondition, scheme,
                     "listing locks is not supported by the " + scheme +
                         " store; use inspect (leader status --lock NAME) for one lock");
}

}  // namespace leader
