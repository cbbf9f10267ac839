#pragma once
// The judge of every expiry claim (DESIGN.md section 5, "Who judges"): a second client of the same
// backend that keeps calling try_acquire (wait 0) on a lock and records when the SERVER first lets
// it in. A test compares the holder's stop signal with that instant, never with the holder's own
// "send time + lease" arithmetic.

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "leader/store.hpp"

namespace leader::test {

/// What an Observer asks for and how often.
struct ObserverOptions {
  Duration ttl = std::chrono::seconds(10);  ///< ttl of the observer's own lease once it gets in
  int slots = 0;                            ///< 0: single lease; N: one slot of an N-slot group
  Duration poll = std::chrono::milliseconds(5);            ///< pause between attempts
  Duration call_timeout = std::chrono::milliseconds(250);  ///< bound of one attempt
  std::string node_id = "observer";
};

/// Polls `lock` from its own client until it acquires it, then holds it until destroyed.
/// Every attempt uses the same owner token, so a grant whose reply was lost (deadline_exceeded)
/// is recognised as the observer's own by the next attempt (stores return the lease to its owner).
/// Thread-safety: the accessors may be called from any thread while it polls.
class Observer {
 public:
  /// Starts polling at once; construct it only after the holder under test acquired.
  Observer(std::shared_ptr<LeaseStore> store, std::string lock, ObserverOptions options = {});
  /// Stops polling and releases the observer's lease, if it got one.
  ~Observer();
  Observer(const Observer&) = delete;
  Observer& operator=(const Observer&) = delete;

  /// The send time of the first attempt the server granted (the earliest instant it can have).
  [[nodiscard]] std::optional<TimePoint> takeover() const;
  /// takeover(), or earlier: the send time of the first attempt of an unbroken run of unknown
  /// outcomes (deadline_exceeded) just before it, but not before `frozen_until` (the end of an
  /// outage during which the server could grant nothing).
  [[nodiscard]] std::optional<TimePoint> earliest_takeover(TimePoint frozen_until = {}) const;
  /// Waits up to `timeout` for a takeover; true once there is one.
  bool wait_for_takeover(Duration timeout);
  /// The lease the observer holds, if any.
  [[nodiscard]] std::optional<Lease> lease() const;
  /// Attempts answered with contention, errors of any code, and all attempts made.
  [[nodiscard]] int contended() const { return contended_.load(); }
  [[nodiscard]] int errors() const { return errors_.load(); }
  [[nodiscard]] int attempts() const { return attempts_.load(); }
  /// Stops polling (keeps a lease already taken until destruction).
  void stop();

 private:
  void poll_loop();
  void attempt();

  std::shared_ptr<LeaseStore> store_;
  std::string lock_;
  ObserverOptions options_;
  std::string owner_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                 // guarded by mu_
  std::optional<Lease> lease_;            // guarded by mu_
  std::optional<TimePoint> takeover_;     // guarded by mu_
  std::optional<TimePoint> unknown_run_;  // guarded by mu_: first unknown outcome since an answer
  std::optional<TimePoint> ghost_from_;   // guarded by mu_: unknown_run_ when takeover came
  std::atomic<int> contended_{0};
  std::atomic<int> errors_{0};
  std::atomic<int> attempts_{0};
  std::thread thread_;
};

}  // namespace leader::test
