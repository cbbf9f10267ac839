#pragma once
// Internal: the waiters of this process for one lock of one store, in arrival order. Only the head
// of a queue asks the store while it waits; the others sleep until they are the head. A release by
// any elector of this process wakes the head at once, so a hand-over between threads of one process
// costs one store round trip instead of a backoff period, and those threads are served in arrival
// order (FIFO within the process). Across processes the head still polls with backoff. Safety does
// not depend on it: every grant is still the store's own compare-and-set; the queue only decides
// who asks when.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>

#include "leader/time.hpp"

namespace leader::detail {

class LocalHold;

/// One waiter's place in the queue of (store, lock); leaves it when destroyed.
class WaitTicket {
 public:
  WaitTicket(const void* store, std::string_view lock);
  ~WaitTicket();
  WaitTicket(const WaitTicket&) = delete;
  WaitTicket& operator=(const WaitTicket&) = delete;

  /// True when a waiter of this process queues for `lock` of `store`, or a lease one of them was
  /// granted is held. One atomic load when no lock of this process has a queue.
  [[nodiscard]] static bool queued(const void* store, std::string_view lock);
  /// True when no earlier waiter of this process is still queued.
  [[nodiscard]] bool head() const;
  /// Call just before each store attempt: releases before it are then not waited for.
  void before_attempt();
  /// While leases granted to this queue's waiters, not yet released, fill `slots` (0: single),
  /// a store attempt would fail and their release will come here: sleeps on `clock` until they
  /// no longer do, until `until` or a stop. No store call. True when it slept.
  bool wait_while_held_here(const Clock& clock, TimePoint until, const std::stop_token& stop,
                            int slots);
  /// Marks a lease this waiter was granted as held here until the returned handle is dropped
  /// (after the store release): dropping it wakes the head.
  [[nodiscard]] LocalHold mark_held();
  /// Sleeps on `clock` until `until`, until `stop` is requested, or until this ticket should try
  /// again: it became the head (a slot may be free), or it is the head and this process released
  /// the lock since before_attempt(). True when woken to try again.
  bool wait(const Clock& clock, TimePoint until, const std::stop_token& stop);

  struct Queue;

 private:
  std::shared_ptr<Queue> queue_;
  std::uint64_t id_ = 0;
  std::uint64_t seen_ = 0;  // the queue's release count at the last before_attempt()
};

/// A lease granted to a waiter of this process, counted among the holders of its queue until
/// dropped (after the store release): dropping it wakes the head. Keeps the queue, and its entry
/// in the registry, meanwhile: a waiter arriving then joins this queue and sees the lease.
class LocalHold {
 public:
  LocalHold() = default;
  explicit LocalHold(std::shared_ptr<WaitTicket::Queue> queue) noexcept
      : queue_(std::move(queue)) {}
  LocalHold(LocalHold&& other) noexcept = default;
  LocalHold& operator=(LocalHold&& other) noexcept {
    if (this != &other) {
      reset();
      queue_ = std::move(other.queue_);
    }
    return *this;
  }
  LocalHold(const LocalHold&) = delete;
  LocalHold& operator=(const LocalHold&) = delete;
  ~LocalHold() { reset(); }
  /// Drops the hold now (no-op when empty).
  void reset() noexcept {
    if (queue_) drop();
  }

 private:
  void drop() noexcept;
  std::shared_ptr<WaitTicket::Queue> queue_;
};

/// An elector of this process released `lock` of `store` (or gave up a slot of it): the head of
/// its queue, if any, tries again now. One atomic load when no waiter of this process queues.
void notify_released(const void* store, std::string_view lock) noexcept;

}  // namespace leader::detail
