#pragma once
/// @file time.hpp
/// Durations, deadlines and the injectable clock. All lease arithmetic uses a steady clock; wall
/// clocks of different machines are never compared.

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace leader {

using namespace std::chrono_literals;

/// Every duration in the public API.
using Duration = std::chrono::milliseconds;
/// Local monotonic time.
using TimePoint = std::chrono::steady_clock::time_point;

/// Source of monotonic time, injected so that timing tests are deterministic.
/// Thread-safety: implementations must be safe to call from any thread.
class Clock {
 public:
  virtual ~Clock() = default;
  /// The current monotonic time.
  [[nodiscard]] virtual TimePoint now() const = 0;
  /// Blocks on `cv` until notified or until `now() >= until` (as this clock counts time).
  virtual void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                          TimePoint until) const = 0;
  /// The process-wide real clock (std::chrono::steady_clock).
  static std::shared_ptr<Clock> system();
};

/// `t + d`, clamped to TimePoint::max() / min() instead of overflowing.
[[nodiscard]] inline TimePoint saturating_add(TimePoint t, Duration d) {
  using Ns = TimePoint::duration;
  if (d > std::chrono::duration_cast<Duration>(Ns::max())) return TimePoint::max();
  if (d < std::chrono::duration_cast<Duration>(Ns::min())) return TimePoint::min();
  const Ns::rep step = std::chrono::duration_cast<Ns>(d).count();
  Ns::rep out = 0;
  if (__builtin_add_overflow(t.time_since_epoch().count(), step, &out))
    return step > 0 ? TimePoint::max() : TimePoint::min();
  return TimePoint(Ns(out));
}

/// A point in real steady time after which a store call must give up (deadline_exceeded).
class Deadline {
 public:
  /// A deadline `d` from now.
  static Deadline after(Duration d) {
    return Deadline(saturating_add(std::chrono::steady_clock::now(), d));
  }
  /// A deadline at the given steady time.
  explicit Deadline(TimePoint at) : at_(at) {}
  /// The absolute steady time.
  [[nodiscard]] TimePoint at() const { return at_; }
  /// Time left, never negative.
  [[nodiscard]] Duration remaining() const {
    auto left = std::chrono::duration_cast<Duration>(at_ - std::chrono::steady_clock::now());
    return left.count() > 0 ? left : Duration{0};
  }
  /// True once the deadline has passed.
  [[nodiscard]] bool expired() const { return std::chrono::steady_clock::now() >= at_; }
  /// The earlier of two deadlines.
  [[nodiscard]] Deadline min(Deadline other) const { return at_ <= other.at_ ? *this : other; }

 private:
  TimePoint at_;
};

/// A manually advanced clock for tests. `advance()` wakes waiters.
class FakeClock : public Clock {
 public:
  explicit FakeClock(TimePoint start = TimePoint{} + std::chrono::hours(1));
  [[nodiscard]] TimePoint now() const override;
  void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  TimePoint until) const override;
  /// Moves time forward by `d`.
  void advance(Duration d);

 private:
  mutable std::mutex mu_;
  TimePoint now_;
};

}  // namespace leader
