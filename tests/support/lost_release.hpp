#pragma once
// A key this process no longer claims must be gone from the server within the ttl of its last
// confirmed renewal, also while the process goes on using the same session (etcd's session lease,
// ZooKeeper's session). The pieces of that check: the holder's process going on, and a second
// store object, straight on the server, that judges when the lock is free again.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <iostream>
#include <string>
#include <thread>

#include "leader/errors.hpp"
#include "leader/store.hpp"
#include "timing.hpp"

namespace leader::test {

/// The holder's process going on: renews `held` and takes and releases `other`, every 200 ms, on
/// the same store object (so on the same session) until destroyed.
class HolderAtWork {
 public:
  /// Renews `held` for `ttl`; `request(lock)` builds the holder's request for a lock.
  HolderAtWork(LeaseStore& store, Lease held, Duration ttl, std::string other,
               std::function<LeaseRequest(const std::string&)> request)
      : store_(store), held_(std::move(held)) {
    thread_ = std::thread([this, ttl, other = std::move(other), request = std::move(request)] {
      using std::chrono::milliseconds;
      while (!stop_) {
        try {
          const auto r = store_.renew(held_, ttl, soon());
          (r.status == LeaseStatus::ok ? renewed : lost)++;
          if (auto got = store_.try_acquire(request(other), soon()))
            (void)store_.release(*got.lease, Duration{0}, soon());
        } catch (const BackendError& e) {
          std::cerr << "holder at work: " << e.what() << "\n";
        }
        std::this_thread::sleep_for(milliseconds(200));
      }
    });
  }
  ~HolderAtWork() { stop(); }
  HolderAtWork(const HolderAtWork&) = delete;
  HolderAtWork& operator=(const HolderAtWork&) = delete;
  /// Stops the loop (idempotent).
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

  std::atomic<int> renewed{0};  ///< renewals the server confirmed
  std::atomic<int> lost{0};     ///< renewals the server refused

 private:
  LeaseStore& store_;
  Lease held_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// The instant `judge` is first granted `request` (polling every 20 ms; a backend error is tried
/// again), released at once; time_point::max() when not within `give_up`.
inline std::chrono::steady_clock::time_point first_takeover(LeaseStore& judge,
                                                            const LeaseRequest& request,
                                                            std::chrono::milliseconds give_up) {
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + give_up;
  while (Clock::now() < end) {
    try {
      if (auto got = judge.try_acquire(request, soon())) {
        const auto at = Clock::now();
        (void)judge.release(*got.lease, Duration{0}, soon());
        return at;
      }
    } catch (const BackendError&) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Clock::time_point::max();
}

/// One lost-release case: `holder` lost the outcome of a call on `lock` (its release, or an
/// acquire's reply) and goes on holding `held` (the lock `kept`); `judge` is a second store object
/// straight on the server.
struct LostRelease {
  LeaseStore& holder;
  LeaseStore& judge;
  std::function<LeaseRequest(const std::string&)> request;
  std::string lock;
  std::string kept;
  Lease held;
  std::chrono::milliseconds ttl;
  std::chrono::milliseconds slack;    ///< the server's expiry rounding and a loaded machine
  std::chrono::milliseconds give_up;  ///< how long the judge tries
  std::string other;                  ///< the lock the holder keeps taking and releasing
};

/// The judgement: while the holder's process goes on, `lock` is free again within ttl + slack of
/// `renew_sent` (the last confirmed renewal of what holds it), and `kept` stays held.
inline void expect_freed_within_ttl(const LostRelease& c,
                                    std::chrono::steady_clock::time_point renew_sent) {
  using Ms = std::chrono::milliseconds;
  HolderAtWork worker(c.holder, c.held, c.ttl, c.other, c.request);
  const auto taken = first_takeover(c.judge, c.request(c.lock), c.give_up);
  // The lease still held keeps being held: the judge can not take it, its renewals are ok.
  EXPECT_FALSE(c.judge.try_acquire(c.request(c.kept), soon()));
  worker.stop();
  EXPECT_GT(worker.renewed.load(), 0);
  EXPECT_EQ(worker.lost.load(), 0)
      << "the session expired: this run proves nothing about a live one";
  ASSERT_TRUE(taken != std::chrono::steady_clock::time_point::max())
      << "the lock stayed held for " << c.give_up.count()
      << " ms while its holder's process renewed another lock";
  const auto after = std::chrono::duration_cast<Ms>(taken - renew_sent);
  std::cout << "lock free again " << after.count() << " ms after the last confirmed renewal (ttl "
            << c.ttl.count() << " ms)\n";
  EXPECT_LE(after, c.ttl + c.slack);
}

}  // namespace leader::test
