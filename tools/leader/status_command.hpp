#pragma once
/// @file status_command.hpp
/// `leader status`: who holds a lock, with which fencing token, for how long.

#include <string>

namespace leader::cli {

/// The parsed options of `leader status`.
struct StatusOptions {
  std::string store;  ///< empty: $LEADER_STORE or the default SQLite file
  std::string lock;
  int slots = 0;  ///< when > 0, also report active/available slots of an N-slot group
  bool json = false;
  int verbosity = 0;
};

/// Prints the lock's holders; returns 0 when held, 3 when free. Throws UsageError (64) and
/// StoreUnavailable (69).
int status(const StatusOptions& options);

}  // namespace leader::cli
