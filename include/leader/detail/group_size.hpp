#pragma once
/// @file group_size.hpp
/// The group size a lock is held with (0: a single leader, N >= 1: a group of N slots), as every
/// store persists it with the lock, and the error for a request that asks for another one while
/// the lock has a live holder (not part of the user-facing API).

#include <string>
#include <string_view>

#include "leader/errors.hpp"

namespace leader::detail {

/// "a single leader" for 0, "a group of N slots" otherwise.
inline std::string describe_group_size(int slots) {
  if (slots == 0) return "a single leader";
  return "a group of " + std::to_string(slots) + (slots == 1 ? " slot" : " slots");
}

/// BackendError(failed_precondition) naming the size the lock is held with and the asked one.
inline BackendError group_size_mismatch(std::string store, std::string_view lock, int held,
                                        int asked) {
  return BackendError(ErrorCode::failed_precondition, std::move(store),
                      "lock '" + std::string(lock) + "' is held as " + describe_group_size(held) +
                          "; this request asks for " + describe_group_size(asked));
}

}  // namespace leader::detail
