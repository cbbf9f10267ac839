#pragma once
/// @file run_report.hpp
/// The result object of `leader run --json` / --json-file: what happened, filled in as the run
/// goes, and written once when leader ends.

#include <cstdint>
#include <optional>
#include <string>

#include "leader/store.hpp"
#include "run_options.hpp"

namespace leader::cli {

/// What `leader run --json` reports.
struct RunReport {
  /// ran, skipped, lost, interrupted, not_started, error, usage_error
  std::string outcome = "error";
  int exit_code = 0;
  std::string store;
  std::string node_id;
  std::uint64_t fencing_token = 0;
  int slot = -1;
  std::string holders;                    ///< skipped: who holds the lock
  std::optional<LockState> holder_state;  ///< skipped: the holders as the store listed them
  std::string error;                      ///< lost: the cause; error: the message
  WallTime started{};
  WallTime finished{};
};

/// Writes the result object: one line on stdout, or the file of --json-file (replaced whole).
void write_report(const RunOptions& o, const RunReport& report);

}  // namespace leader::cli
