#pragma once
// Internal: the rules of one acquisition (attempt / wait / done), shared by the blocking driver
// (ElectionCore::acquire) and the asynchronous one (ElectionCore::acquire_async). No I/O, no
// clock reading, no lock: a driver sends the attempts, pauses and reads the clock; this decides
// what comes next and how a call without a grant ends.

#include <algorithm>
#include <chrono>
#include <optional>

#include "leader/errors.hpp"
#include "leader/time.hpp"

namespace leader::detail {

/// The first pause between two attempts, and the longest (the backoff doubles in between).
inline constexpr Duration kFirstBackoff{25};
inline constexpr Duration kMaxBackoff{1000};

/// True for a store error whose outcome is unknown (the attempt may have been granted) and that
/// another attempt may get past: unavailable, deadline_exceeded, internal.
[[nodiscard]] constexpr bool retryable(ErrorCode code) noexcept {
  return code == ErrorCode::unavailable || code == ErrorCode::deadline_exceeded ||
         code == ErrorCode::internal;
}

class AcquireLoop {
 public:
  /// How a call without a grant ends, or `go_on` (pause, then attempt again).
  enum class End {
    go_on,
    cancelled,  ///< the caller's stop: Skipped{cancelled}
    wait_over,  ///< wait_time passed: the last attempt's error, else Skipped{contention}
    failed,     ///< a store error that is not retryable: that error
  };

  /// The call's wait runs from `start` (the first attempt's send time) for `wait_time`.
  AcquireLoop(TimePoint start, Duration wait_time)
      : wait_until_(saturating_add(start, wait_time)) {}

  /// An attempt the store answered without a grant (contention): an earlier error is no longer
  /// the last word.
  void contended() noexcept { last_error_.reset(); }
  /// An attempt that failed with `e`: `failed` when the error is not retryable (the call ends
  /// with it now), `go_on` otherwise (the attempt's outcome is unknown: it may hold a lease).
  End failed(const BackendError& e) {
    if (!retryable(e.code())) return End::failed;
    unknown_ = true;
    last_error_ = e;
    return End::go_on;
  }
  /// After an attempt without a grant, at `now`: `wait_over` once the wait has passed (an
  /// attempt at the wait's end is the store's answer, so it counts over a stop), `cancelled` when
  /// the caller stopped, `go_on` otherwise.
  [[nodiscard]] End after_attempt(TimePoint now, bool stopped) const noexcept {
    if (now >= wait_until_) return End::wait_over;
    return stopped ? End::cancelled : End::go_on;
  }
  /// The pause before the next attempt: `jittered` (the current backoff with its jitter), cut to
  /// what is left of the wait.
  [[nodiscard]] Duration pause(TimePoint now, Duration jittered) const noexcept {
    return std::min(jittered, std::chrono::duration_cast<Duration>(wait_until_ - now));
  }
  /// The pause ended: woken by a change of the lock (the backoff starts again) or not (it
  /// doubles, up to kMaxBackoff).
  void woken(bool changed) noexcept {
    backoff_ = changed ? kFirstBackoff : std::min(backoff_ * 2, kMaxBackoff);
  }

  /// The backoff the next pause is jittered from.
  [[nodiscard]] Duration backoff() const noexcept { return backoff_; }
  /// True when an attempt's outcome is unknown: a call that ends without a grant releases what
  /// that attempt may hold.
  [[nodiscard]] bool unknown() const noexcept { return unknown_; }
  /// The error of the last attempt, unless a later one was answered (contended()).
  [[nodiscard]] const std::optional<BackendError>& last_error() const noexcept {
    return last_error_;
  }
  /// When the wait ends.
  [[nodiscard]] TimePoint wait_until() const noexcept { return wait_until_; }

 private:
  TimePoint wait_until_;
  Duration backoff_ = kFirstBackoff;
  std::optional<BackendError> last_error_;
  bool unknown_ = false;
};

}  // namespace leader::detail
