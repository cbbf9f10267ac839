#pragma once
// The client's asynchronous I/O (the store's README.md, "Waiting without a thread"): one I/O
// thread per client, started on first use, that carries every asynchronous command (the store's
// acquisition attempts) and every wait for a channel's next change (a lock's changes channel,
// which the store's scripts PUBLISH on). Commands queued while a round trip is under way go out
// together as one pipeline on one connection of its own (replies come back in order, each to its
// caller); waits are timers on this thread and subscriptions on one subscriber connection, so
// thousands of waiting callers cost two connections and one thread, whatever their number.
//
// A wait is never woken by a message it could have missed: each channel counts its changes
// (messages, and each confirmed subscription, which may have missed some), a command reports
// the count when it was written, and a wait whose command saw an older count (or none: not yet
// subscribed) is woken at once, or at the subscription's confirmation. Callbacks run on the
// lane's thread with no lock held.

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "connection.hpp"
#include "leader/time.hpp"

namespace leader::redis {

class ConnectionPool;

class AsyncLane {
 public:
  /// What a submitted command completes with: its reply (null with an error), the error
  /// (a BackendError; the command's outcome is then unknown unless it was never sent), when the
  /// pipeline carrying it was written, and the change count of its channel at that moment
  /// (0 when the channel was not subscribed then).
  using Done = std::function<void(Reply reply, std::exception_ptr error, TimePoint sent,
                                  std::uint64_t seen)>;

  /// A lane opening its connections through `pool` (which must outlive it: the Client owns both).
  explicit AsyncLane(ConnectionPool& pool);
  /// Stops the thread; commands not yet sent complete with BackendError(unavailable), waits
  /// end with woken(false). From the lane's own thread (a callback dropped the last reference to
  /// the store) the thread is detached and ends as soon as that callback returns.
  ~AsyncLane();
  AsyncLane(const AsyncLane&) = delete;
  AsyncLane& operator=(const AsyncLane&) = delete;

  /// Sends `command` in the next pipeline before `deadline`; `done` runs once on the lane's
  /// thread (never inside this call). `channel` is the lock's changes channel: the lane
  /// subscribes to it, so a wait after this attempt hears every later change.
  void submit(Command command, std::string channel, Deadline deadline, Done done);
  /// Calls `woken` once on the lane's thread: true at the first change of `channel` after the
  /// one counted in `seen` (at once when one came already, or when `seen` is 0 and the
  /// subscription was confirmed since) while this wait has the smallest `order` of the channel's
  /// waits (a change wakes only that one: the next in line), false at `until` while it has the
  /// smallest order (it polls for an expiry, which publishes nothing), at `last` otherwise, or
  /// after cancel(id). A wait that becomes the smallest gets its pause (`until` - now at the
  /// call) counted anew from then. Returns the wait's id.
  std::uint64_t wait(const std::string& channel, std::uint64_t seen, Deadline until, Deadline last,
                     std::uint64_t order, std::function<void(bool)> woken);
  /// Ends wait `id` soon with woken(false), unless it ended already.
  void cancel(std::uint64_t id) noexcept;

  /// Counters, for tests and benchmarks.
  struct Stats {
    std::uint64_t pipelines = 0;  ///< round trips on the command connection
    std::uint64_t commands = 0;   ///< commands sent
    std::uint64_t messages = 0;   ///< change messages received
    std::uint64_t waits = 0;      ///< waits in progress
    std::uint64_t channels = 0;   ///< channels subscribed or being subscribed
  };
  [[nodiscard]] Stats stats() const;

  struct Shared;  // the state the thread and the callers share (async_lane.cpp)

 private:
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace leader::redis
