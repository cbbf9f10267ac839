#include "leader/time.hpp"

namespace leader {
namespace {

class SteadyClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  TimePoint until) const override {
    cv.wait_until(lock, until);
  }
};

}  // namespace

std::shared_ptr<Clock> Clock::system() {
  static const std::shared_ptr<Clock> clock = std::make_shared<SteadyClock>();
  return clock;
}

FakeClock::FakeClock(TimePoint start) : now_(start) {}

TimePoint FakeClock::now() const {
  std::lock_guard lock(mu_);
  return now_;
}

void FakeClock::wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                           TimePoint until) const {
  // Fake time moves only in advance(); poll briefly in real time so waiters see it.
  if (now() >= until) return;
  cv.wait_for(lock, std::chrono::milliseconds(1));
}

void FakeClock::advance(Duration d) {
  std::lock_guard lock(mu_);
  now_ += d;
}

}  // namespace leader
