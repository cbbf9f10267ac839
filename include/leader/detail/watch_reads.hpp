#pragma once
/// @file watch_reads.hpp
/// Internal: the deadline of a read inside a LockWatcher::watch. A change that wakes a watch just
/// before its deadline is read, not turned into deadline_exceeded: such a read gets at least
/// kWatchLeastReadTime, even when the watch's own deadline is nearer.

#include <chrono>

#include "leader/time.hpp"

namespace leader::detail {

inline constexpr Duration kWatchLeastReadTime = std::chrono::seconds(1);

/// `deadline`, or kWatchLeastReadTime from now when that is later.
[[nodiscard]] inline Deadline watch_read_deadline(Deadline deadline) {
  return deadline.remaining() < kWatchLeastReadTime ? Deadline::after(kWatchLeastReadTime)
                                                    : deadline;
}

}  // namespace leader::detail
