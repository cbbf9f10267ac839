#pragma once
// Internal: the shared state of one held lease, seen by the guard, the context and the renewal
// scheduler.

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>

#include "leader/elector.hpp"

namespace leader::detail {

struct HeldLease {
  std::shared_ptr<LeaseStore> store;
  std::shared_ptr<Clock> clock;
  std::shared_ptr<ElectionListener> listener;
  std::shared_ptr<HistorySink> history;
  ElectionOptions options;
  LeaseInfo info;
  bool fail_open = false;
  std::stop_source stop;
  std::optional<std::stop_callback<std::function<void()>>> caller_link;
  std::stop_token caller;

  std::mutex mu;
  std::condition_variable cv;
  Lease lease;                 // guarded by mu
  TimePoint local_deadline{};  // guarded by mu
  TimePoint next_renew{};      // guarded by mu
  int renewals_in_flight = 0;  // guarded by mu: queued or running
  int renewals_running = 0;    // guarded by mu: store calls under way
  bool lost = false;           // guarded by mu
  bool finished = false;       // guarded by mu
  bool released = false;       // guarded by mu: finish() ran

  /// Position in the scheduler's queue; guarded by the scheduler's own mutex.
  using ScheduleKey = std::pair<TimePoint, std::uint64_t>;
  std::optional<ScheduleKey> scheduled;

  /// The ttl to judge a grant by: the requested one, or the store's shorter grant (ZooKeeper
  /// sessions can grant less than asked for).
  [[nodiscard]] static Duration granted(Duration requested, const Lease& lease) {
    return lease.ttl > Duration{0} && lease.ttl < requested ? lease.ttl : requested;
  }
  /// The local deadline after a grant of `ttl` sent at `sent`.
  [[nodiscard]] TimePoint deadline_after(TimePoint sent, Duration ttl) const;
  /// Marks the lease lost once: fires the stop_token and emits on_lost. Call without `mu` held.
  void mark_lost(const std::string& reason) noexcept;
};

}  // namespace leader::detail
