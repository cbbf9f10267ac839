#include "leader/lock_listing.hpp"

#include <string>

#include "leader/errors.hpp"
#include "leader/names.hpp"

namespace leader {

std::vector<LockState> list_locks(LeaseStore& store, std::string_view prefix, Deadline deadline) {
  if (LockLister* lister = store.capabilities().listing)
    return lister->list_locks(prefix, deadline);
  const std::string scheme(store.scheme());
  throw BackendError(ErrorCode::failed_precondition, scheme,
                     "listing locks is not supported by the " + scheme +
                         " store; use inspect (leader status --lock NAME) for one lock");
}

namespace detail {

std::vector<LockState> held_locks(LeaseStore& store, const std::set<std::string>& names,
                                  Deadline deadline) {
  std::vector<LockState> out;
  for (const auto& name : names) {
    try {
      validate_lock_name(name);
    } catch (const InvalidArgument&) {
      continue;  // a key under the prefix that is not one of the store's locks
    }
    LockState state = store.inspect(name, deadline);
    if (state.held()) out.push_back(std::move(state));
  }
  return out;
}

}  // namespace detail

}  // namespace leader
