#pragma once
/// @file keeper.hpp
/// The keeper process of `leader run` (see process_group.hpp for the process model). Everything
/// it runs after fork is async-signal-safe: leader has threads, and the keeper never calls exec.

#include <sys/types.h>

#include "process_group.hpp"

namespace leader::cli {

/// What the keeper needs, prepared before fork (nothing may be allocated after it).
struct KeeperSetup {
  pid_t leader_pid = -1;
  const CommandSpec* spec = nullptr;
  char* const* argv = nullptr;  ///< spec->argv as C strings
  char* const* envp = nullptr;  ///< spec->env as C strings
  int report_fd = -1;           ///< write end of the report pipe to leader
  int deadline_fd = -1;         ///< read end of the deadline feed from leader
};

/// Starts the command in a new process group, enforces the lease's local deadline, reaps the
/// command and every orphan, and exits once the command has exited and no descendant is left.
[[noreturn]] void run_keeper(const KeeperSetup& setup) noexcept;

}  // namespace leader::cli
