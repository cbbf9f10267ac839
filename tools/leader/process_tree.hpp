#pragma once
/// @file process_tree.hpp
/// Signalling every descendant of a process, including those that left its process group or
/// session (setsid, setpgid, double forks). Descendants are found by a walk of /proc; orphans stay
/// descendants because leader and its keeper are child subreapers (PR_SET_CHILD_SUBREAPER).

#include <sys/types.h>

namespace leader::cli {

/// Sends `sig` to every descendant of `root` as /proc shows them now (children, grandchildren,
/// ...) except `spared` itself (its descendants are signalled). Returns how many were signalled.
/// Async-signal-safe (no allocation, no locks): the keeper calls it after fork. Not reentrant:
/// call it from one thread of a process at a time.
int signal_descendants(pid_t root, pid_t spared, int sig) noexcept;

}  // namespace leader::cli
