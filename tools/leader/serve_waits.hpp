#pragma once
/// @file serve_waits.hpp
/// Requests of `leader serve` that wait (acquires with a 'wait', long-polls of /v1/leader): a
/// bounded number of them at once, each cancelled when the sidecar stops or its client leaves.

#include <httplib.h>

#include <atomic>
#include <functional>
#include <stop_token>
#include <thread>

namespace leader::cli {

/// The stop token of one waiting request: fires when the sidecar stops or when the client closes
/// its connection (checked every 100 ms), so that a client that gave up is not granted the lock.
class WaitWatch {
 public:
  WaitWatch(const httplib::Request& req, const std::stop_token& stopping);
  WaitWatch(const WaitWatch&) = delete;
  WaitWatch& operator=(const WaitWatch&) = delete;
  ~WaitWatch() = default;  // poller_ (declared last) is stopped and joined first

  [[nodiscard]] std::stop_token token() const { return source_.get_token(); }
  /// True once the client was seen gone (now or by the poller).
  [[nodiscard]] bool client_gone();

 private:
  void poll(const std::stop_token& done);

  int fd_;
  std::stop_source source_;
  std::atomic<bool> gone_{false};
  std::stop_callback<std::function<void()>> relay_;
  std::jthread poller_;
};

/// One of the bounded places for requests that wait: at most `limit` at once, so that waiting
/// requests never hold every HTTP worker and renewals, releases and health checks are still
/// answered. The excess is refused with 429 (ApiError too_many_waits; sent with Retry-After).
class WaitSlot {
 public:
  WaitSlot(std::atomic<int>& count, int limit);
  WaitSlot(const WaitSlot&) = delete;
  WaitSlot& operator=(const WaitSlot&) = delete;
  ~WaitSlot() { count_.fetch_sub(1); }

 private:
  std::atomic<int>& count_;
};

}  // namespace leader::cli
