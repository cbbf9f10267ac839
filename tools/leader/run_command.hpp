#pragma once
/// @file run_command.hpp
/// `leader run`: run a command only on the replica that holds the lock. The options are in
/// run_options.hpp, the elector in run_election.hpp, the supervision of the command in
/// supervise.hpp, the --json result in run_report.hpp.

#include "run_options.hpp"

namespace leader::cli {

/// Runs `leader run`; returns the exit code. Throws UsageError (64) and StoreFailure (69, 77, 78).
/// With --json / --json-file, writes the result object before returning or throwing.
int run(const RunOptions& options);

}  // namespace leader::cli
