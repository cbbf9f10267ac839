#pragma once
// What an observe_lock callback reported, for the watch tests (contract and store-specific): the
// fencing token of each snapshot (0 = free) and when it came, with a wait for the n-th.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "leader/store.hpp"

namespace leader::test {

class SeenChanges {
 public:
  using Clock = std::chrono::steady_clock;

  /// The observe_lock callback: records `s`, returns true (keep observing).
  bool record(const LockState& s) {
    std::lock_guard lock(mu_);
    tokens_.push_back(s.held() ? s.holders[0].fencing_token : 0);
    at_.push_back(Clock::now());
    cv_.notify_all();
    return true;
  }
  /// Waits up to `limit` until `n` snapshots were reported; when the n-th came.
  std::optional<Clock::time_point> wait_for(std::size_t n, Duration limit) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, limit, [&] { return tokens_.size() >= n; })) return std::nullopt;
    return at_[n - 1];
  }
  /// The tokens reported so far, in order.
  [[nodiscard]] std::vector<std::uint64_t> tokens() const {
    std::lock_guard lock(mu_);
    return tokens_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::uint64_t> tokens_;
  std::vector<Clock::time_point> at_;
};

}  // namespace leader::test
