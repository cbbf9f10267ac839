#pragma once
// "The server is the judge" for the CLI's doors: a second client of the real store (the library,
// leader::open) that keeps asking for the lock, and a command's timestamped writes to hold
// against the send time of that client's grant.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "leader/store.hpp"

namespace leader::cli_test {

using Wall = std::chrono::system_clock;

/// Nanoseconds since the epoch on the wall clock, as `date +%s%N` prints them.
std::int64_t wall_ns(Wall::time_point t);
/// Milliseconds from `from` to `to`.
double ms_between(Wall::time_point from, Wall::time_point to);
/// A shell loop that appends `date +%s%N` to `file` every 10 ms.
std::string timestamp_writer(const std::string& file);
/// The timestamps written to `file` so far.
std::vector<std::int64_t> timestamps(const std::string& file);
/// The second client's request for `lock`: wait 0, a 30 s ttl, its own owner token.
LeaseRequest second_client_request(const std::string& lock);

/// Keeps calling try_acquire on `lock` until the server lets it in, and records the send time of
/// that call; holds the lock until destroyed.
class SecondClient {
 public:
  SecondClient(const std::string& uri, std::string lock);
  ~SecondClient();
  SecondClient(const SecondClient&) = delete;
  SecondClient& operator=(const SecondClient&) = delete;

  /// Waits up to `limit` for the grant; returns the send time of the granted attempt.
  std::optional<Wall::time_point> granted(std::chrono::seconds limit);
  /// True once the server granted the lock.
  [[nodiscard]] bool taken() const { return taken_.load(); }

 private:
  void poll();

  std::shared_ptr<LeaseStore> store_;
  std::string lock_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> taken_{false};
  std::mutex mu_;
  std::optional<Wall::time_point> taken_at_;
  std::optional<Lease> lease_;
  std::thread thread_;
};

/// The judgement: waits for `client`'s grant, then checks that every timestamp in `file` came
/// before its send time, and that something was written after `disturbed_at` (else the case proves
/// nothing). `who` names the door in the messages.
void expect_no_write_after_grant(SecondClient& client, const std::string& file,
                                 Wall::time_point disturbed_at, const std::string& who);

}  // namespace leader::cli_test
