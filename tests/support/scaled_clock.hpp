#pragma once
// A steady clock that runs at `rate` times real time from its creation: the in-process form of a
// clock-rate fault (libfaketime's "x0.9"), injected through ElectorHooks::clock.

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "leader/time.hpp"

namespace leader::test {

/// now() = start + rate * (real now - start); waits end when this clock reaches their time.
class ScaledClock final : public Clock {
 public:
  /// A clock running at `rate` (0.9 = 10% slow) from now on.
  explicit ScaledClock(double rate) : rate_(rate), start_(std::chrono::steady_clock::now()) {}
  [[nodiscard]] TimePoint now() const override {
    return to_scaled(std::chrono::steady_clock::now());
  }
  void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  TimePoint until) const override {
    cv.wait_until(lock, to_real(until));
  }
  /// The rate given at construction.
  [[nodiscard]] double rate() const { return rate_; }

 private:
  [[nodiscard]] TimePoint to_scaled(TimePoint real) const {
    return start_ + std::chrono::duration_cast<TimePoint::duration>((real - start_) * rate_);
  }
  [[nodiscard]] TimePoint to_real(TimePoint scaled) const {
    if (scaled == TimePoint::max()) return scaled;
    return start_ + std::chrono::duration_cast<TimePoint::duration>((scaled - start_) / rate_);
  }

  double rate_;
  TimePoint start_;
};

}  // namespace leader::test
