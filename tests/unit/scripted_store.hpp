#pragma once
// Test kit for the safety tests: a store whose calls a test scripts (delay, fail, apply and
// then fail, grant less), an observer that asks the server itself whether someone else can get
// in, and a stepper that drives a FakeClock until that happens.

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include "leader/leader.hpp"
#include "leader/stores/memory.hpp"

namespace leader::testkit {

using namespace std::chrono_literals;

/// Polls `p` for up to 2 s of real time (the scheduler threads run on real time).
template <class Pred>
bool eventually(Pred p, std::chrono::milliseconds limit = 2000ms) {
  for (auto waited = 0ms; waited < limit && !p(); waited += 1ms) std::this_thread::sleep_for(1ms);
  return p();
}

/// A store that forwards to `inner` unless a test installed a hook for the call. Hooks get the
/// inner store so they can apply a call and still report a failure (outcome unknown).
class ScriptedStore : public LeaseStore {
 public:
  using AcquireHook = std::function<Acquired(const LeaseRequest&, Deadline, LeaseStore&)>;
  using RenewHook = std::function<Renewal(const Lease&, Duration, Deadline, LeaseStore&)>;
  using ReleaseHook = std::function<LeaseStatus(const Lease&, Duration, Deadline, LeaseStore&)>;

  explicit ScriptedStore(std::shared_ptr<LeaseStore> inner) : inner_(std::move(inner)) {}

  /// Installs hooks; call before an elector uses the store.
  AcquireHook on_acquire;
  RenewHook on_renew;
  ReleaseHook on_release;

  std::string_view scheme() const override { return "scripted"; }
  Acquired try_acquire(const LeaseRequest& r, Deadline d) override {
    {
      std::lock_guard lock(mu_);
      acquires_.push_back(r);
    }
    return on_acquire ? on_acquire(r, d, *inner_) : inner_->try_acquire(r, d);
  }
  Renewal renew(const Lease& l, Duration ttl, Deadline d) override {
    {
      std::lock_guard lock(mu_);
      renew_ttls_.push_back(ttl);
    }
    return on_renew ? on_renew(l, ttl, d, *inner_) : inner_->renew(l, ttl, d);
  }
  LeaseStatus release(const Lease& l, Duration keep_for, Deadline d) override {
    {
      std::lock_guard lock(mu_);
      releases_.emplace_back(l, keep_for);
    }
    return on_release ? on_release(l, keep_for, d, *inner_) : inner_->release(l, keep_for, d);
  }
  LockState inspect(std::string_view lock, Deadline d) override { return inner_->inspect(lock, d); }
  void put_candidate(std::string_view g, const Candidate& c, Duration t, Deadline d) override {
    inner_->put_candidate(g, c, t, d);
  }
  std::vector<Candidate> list_candidates(std::string_view g, Deadline d) override {
    return inner_->list_candidates(g, d);
  }
  void remove_candidate(std::string_view g, std::string_view n, Deadline d) override {
    inner_->remove_candidate(g, n, d);
  }

  /// The ttl of every renew call so far, in call order.
  std::vector<Duration> renew_ttls() {
    std::lock_guard lock(mu_);
    return renew_ttls_;
  }
  /// Every try_acquire request so far.
  std::vector<LeaseRequest> acquires() {
    std::lock_guard lock(mu_);
    return acquires_;
  }
  /// Every release call so far: (lease, keep_for).
  std::vector<std::pair<Lease, Duration>> releases() {
    std::lock_guard lock(mu_);
    return releases_;
  }

 private:
  std::shared_ptr<LeaseStore> inner_;
  std::mutex mu_;
  std::vector<Duration> renew_ttls_;
  std::vector<LeaseRequest> acquires_;
  std::vector<std::pair<Lease, Duration>> releases_;
};

/// A one-shot gate a hook can wait on while a test thread decides when to open it.
class Gate {
 public:
  void wait() {
    std::unique_lock lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
  }
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  [[nodiscard]] int waiting() {
    std::lock_guard lock(mu_);
    return waiting_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  bool open_ = false;
};

/// The server's verdict: a second client of the same store that tries to take `lock` now.
inline bool observer_takes_over(LeaseStore& server, const std::string& lock) {
  return server.try_acquire({lock, new_owner_token(), "observer", 1s, 0}, Deadline::after(1s))
      .lease.has_value();
}

/// When the holder's stop signal was seen and when the observer got in, in fake time.
struct Race {
  std::optional<TimePoint> stopped;
  std::optional<TimePoint> taken;
};

/// Advances `clock` by `step` until the observer takes over `lock` on `server` (or `limit` of
/// fake time passed). After each step it lets the scheduler act: once the holder's own deadline
/// has passed it waits for its stop signal; the verdict is still the observer's.
inline Race step_until_takeover(FakeClock& clock, LeaseStore& server, const std::string& lock,
                                LeaderContext& holder, Duration step, Duration limit) {
  Race race;
  const TimePoint end = clock.now() + limit;
  auto stop = holder.stop_token();
  while (clock.now() < end) {
    clock.advance(step);
    if (clock.now() >= holder.deadline()) eventually([&] { return stop.stop_requested(); });
    std::this_thread::sleep_for(2ms);  // lets a renewal due now reach the store first
    if (!race.stopped && stop.stop_requested()) race.stopped = clock.now();
    if (observer_takes_over(server, lock)) {
      race.taken = clock.now();
      return race;
    }
  }
  return race;
}

/// Asserts the holder stopped before the server let the observer in, by at least `gap`.
inline void expect_stop_before_takeover(const Race& race, Duration gap) {
  ASSERT_TRUE(race.taken) << "the observer never got in";
  ASSERT_TRUE(race.stopped) << "the observer got in while the holder had no stop signal";
  EXPECT_GE(*race.taken - *race.stopped, gap);
}

}  // namespace leader::testkit
