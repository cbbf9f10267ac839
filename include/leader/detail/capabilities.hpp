#pragma once
/// @file capabilities.hpp
/// The interfaces behind two entries of leader::Capabilities that only the engine uses: waiting
/// in line and asynchronous attempts. A store implements the interface beside LeaseStore and
/// reports itself in its capabilities().

#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <stop_token>
#include <string_view>

#include "leader/store.hpp"

namespace leader::detail {

/// Optional capability of a store that keeps a waiter's place in line (LeaseRequest::wait_in_line):
/// a contended single-lease attempt leaves its queue entry in place for the next attempt of the
/// same owner token, and the first in line gets the lock at its next attempt once the holder
/// leaves: FIFO across processes. Exclusion and fencing do not depend on it
/// (the grant is still the store's own recipe); it only decides who is granted next.
class WaitsInLine {
 public:
  virtual ~WaitsInLine() = default;
  /// Gives up the place `request.owner` holds in `request.lock`'s line, if it holds one (no-op
  /// otherwise, e.g. after a grant). Best effort within `deadline`: a failed removal is retried by
  /// the store in the background, and the entry ends with the store's session at the latest.
  virtual void leave_line(const LeaseRequest& request, Deadline deadline) noexcept = 0;
  /// Blocks until the waiter just ahead of `request.owner`'s place leaves the line (or its entry
  /// changes), until `deadline` or until `stop` is requested: true when woken by the line (the
  /// caller asks again now), false at the deadline or a stop, nullopt when the owner holds no
  /// place (the caller waits its usual way). Throws BackendError as a read of the store would.
  [[nodiscard]] virtual std::optional<bool> wait_turn(const LeaseRequest& request,
                                                      Deadline deadline,
                                                      const std::stop_token& stop) = 0;
};

/// Optional capability of a store with asynchronous I/O of its own (Redis): an acquisition
/// attempt and the wait for the lock's next change run on the store's I/O thread, multiplexed
/// with every other one, so an acquisition that waits for a lock holds no thread of the caller
/// (the asynchronous doors). Nothing here changes what a grant means:
/// the attempt is the store's try_acquire, sent as it would be sent from a blocking call.
class AsyncAttempts {
 public:
  virtual ~AsyncAttempts() = default;
  /// The outcome of one attempt.
  struct Attempt {
    Acquired acquired{};       ///< the grant, or empty on contention (when `error` is null)
    std::exception_ptr error;  ///< what try_acquire would have thrown (a BackendError)
    /// The lock's change count when the attempt was sent, for wait_change; 0: not known (the
    /// store was not yet told of the lock's changes then).
    std::uint64_t seen = 0;
  };
  /// False when the store cannot attempt asynchronously in its configuration (e.g. a Redis
  /// Cluster, `?wait_replicas=`): the caller then calls try_acquire on a thread of its own.
  [[nodiscard]] virtual bool attempts_async() const noexcept = 0;
  /// try_acquire(request, deadline) without blocking: `done` runs exactly once, on the store's
  /// I/O thread, never inside this call, with the outcome. `done` must not block.
  virtual void try_acquire_async(const LeaseRequest& request, Deadline deadline,
                                 std::function<void(Attempt)> done) = 0;
  /// Calls `woken` exactly once, on the store's I/O thread, never inside this call: true when
  /// `lock`'s holders changed (or may have: the store's notifications were interrupted) since
  /// the attempt that reported `seen`, false at the end of the wait or after cancel_wait(id).
  /// Several waits of one lock are a line ordered by `order` (the caller's arrival): a change
  /// wakes the first only, and only the first polls (ends at `until`, its pause, to ask the
  /// store again: an expiry publishes nothing); the others end at `last` (the caller's whole
  /// wait) unless they become first. `woken` must not block. Returns the wait's id.
  virtual std::uint64_t wait_change(std::string_view lock, std::uint64_t seen, Deadline until,
                                    Deadline last, std::uint64_t order,
                                    std::function<void(bool changed)> woken) = 0;
  /// Ends the wait `id` soon (woken(false)), unless it already ended.
  virtual void cancel_wait(std::uint64_t id) noexcept = 0;
};

}  // namespace leader::detail
