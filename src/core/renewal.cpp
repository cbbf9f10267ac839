#include "renewal.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <thread>
#include <vector>

namespace leader::detail {
namespace {

constexpr int kWorkers = 2;

class Scheduler final : public RenewalScheduler {
 public:
  explicit Scheduler(std::shared_ptr<Clock> clock) : clock_(std::move(clock)) {
    timer_ = std::thread([this] { timer_loop(); });
    for (int i = 0; i < kWorkers; ++i) workers_.emplace_back([this] { worker_loop(); });
  }

  ~Scheduler() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    jobs_cv_.notify_all();
    timer_.join();
    for (auto& w : workers_) w.join();
  }

  void watch(const std::shared_ptr<HeldLease>& held) override {
    {
      std::lock_guard hl(held->mu);
      if (held->options.auto_extend) held->next_renew = renew_time(held->lease.sent_at, *held);
    }
    reschedule(held);
  }

  void reschedule(const std::shared_ptr<HeldLease>& held) override {
    TimePoint due;
    {
      std::lock_guard hl(held->mu);
      if (held->finished || held->lost) return;
      due = held->local_deadline;
      if (held->options.auto_extend && held->renewals_in_flight == 0)
        due = std::min(due, held->next_renew);
    }
    bool earliest;
    {
      std::lock_guard lock(mu_);
      if (held->scheduled) queue_.erase(*held->scheduled);
      Key key{due, ++sequence_};
      earliest = due < planned_wake_;
      queue_.emplace(key, held);
      held->scheduled = key;
    }
    if (earliest) cv_.notify_all();  // only an earlier wake-up needs the timer thread
  }

  void unwatch(HeldLease& held) override {
    {
      std::unique_lock hl(held.mu);
      held.finished = true;
      // Renewals still queued see `finished` and do nothing; only a running one is waited for.
      held.cv.wait(hl, [&] { return held.renewals_running == 0; });
    }
    std::lock_guard lock(mu_);
    if (held.scheduled) queue_.erase(*held.scheduled);
    held.scheduled.reset();
  }

 private:
  using Key = HeldLease::ScheduleKey;

  TimePoint renew_time(TimePoint sent, const HeldLease& h) {
    // lease/3 with +-10% jitter, so many leases acquired together do not renew together.
    auto third = HeldLease::granted(h.options.lease_time, h.lease) / 3;
    std::uniform_int_distribution<std::int64_t> jitter(-third.count() / 10, third.count() / 10);
    std::lock_guard lock(rng_mu_);
    return sent + third + Duration(jitter(rng_));
  }

  void timer_loop() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      TimePoint now = clock_->now();
      if (!queue_.empty() && queue_.begin()->first.first <= now) {
        std::weak_ptr<HeldLease> weak = queue_.begin()->second;
        queue_.erase(queue_.begin());
        auto held = weak.lock();
        if (held) held->scheduled.reset();
        lock.unlock();
        if (held) handle(held);
        lock.lock();
        continue;
      }
      TimePoint next = queue_.empty() ? TimePoint::max() : queue_.begin()->first.first;
      // Keep a pending earlier wake-up (its entry may have been released since): then a new
      // lease due later needs no notify, which keeps acquire/release free of context switches.
      planned_wake_ = planned_wake_ <= now ? next : std::min(planned_wake_, next);
      TimePoint until =
          planned_wake_ == TimePoint::max() ? now + std::chrono::hours(24) : planned_wake_;
      clock_->wait_until(lock, cv_, until);
    }
  }

  void handle(const std::shared_ptr<HeldLease>& held) {
    bool expired = false;
    bool renew = false;
    {
      std::lock_guard hl(held->mu);
      if (held->finished || held->lost) return;
      TimePoint now = clock_->now();
      if (now >= held->local_deadline) {
        expired = true;
      } else if (held->options.auto_extend && held->renewals_in_flight == 0 &&
                 now >= held->next_renew) {
        renew = true;
        ++held->renewals_in_flight;
      }
    }
    if (expired) {
      held->mark_lost("local deadline passed without a confirmed renewal");
      return;
    }
    if (renew) {
      {
        std::lock_guard lock(mu_);
        jobs_.emplace_back([this, held] { renew_once(held); });
      }
      jobs_cv_.notify_one();
    }
    reschedule(held);  // the deadline stays watched while the renewal is in flight
  }

  void renew_once(const std::shared_ptr<HeldLease>& held) {
    Lease copy;
    TimePoint local_deadline;
    {
      std::lock_guard hl(held->mu);
      if (held->finished) {
        --held->renewals_in_flight;
        return;
      }
      ++held->renewals_running;
      copy = held->lease;
      local_deadline = held->local_deadline;
    }
    TimePoint sent = clock_->now();
    auto left = std::chrono::duration_cast<Duration>(local_deadline - sent);
    auto budget = std::clamp(left, Duration{1}, held->options.effective_call_timeout());
    std::optional<LeaseStatus> status;
    std::string error;
    try {
      status = held->store->renew(copy, held->options.lease_time, Deadline::after(budget));
    } catch (const std::exception& ex) {
      error = ex.what();
    }
    bool lost = false;
    {
      std::lock_guard hl(held->mu);
      --held->renewals_in_flight;
      --held->renewals_running;
      if (status == LeaseStatus::ok) {
        if (!held->finished) {
          copy.sent_at = sent;
          held->lease = copy;
          held->local_deadline =
              std::max(held->local_deadline,
                       held->deadline_after(
                           sent, HeldLease::granted(held->options.lease_time, held->lease)));
          held->next_renew = renew_time(sent, *held);
        }
      } else if (status == LeaseStatus::lost) {
        lost = true;
      } else {
        // Unknown outcome or store down: retry soon; the local deadline still stands.
        auto retry = std::clamp(held->options.lease_time / 10, Duration{10}, Duration{1000});
        held->next_renew = clock_->now() + retry;
      }
    }
    held->cv.notify_all();
    if (lost) {
      held->mark_lost("renewal refused: the lease was taken over or expired on the server");
      return;
    }
    reschedule(held);
  }

  void worker_loop() {
    std::unique_lock lock(mu_);
    while (true) {
      jobs_cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  std::shared_ptr<Clock> clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable jobs_cv_;
  std::map<Key, std::weak_ptr<HeldLease>> queue_;  // one entry per watched lease
  std::uint64_t sequence_ = 0;
  TimePoint planned_wake_ = TimePoint::max();  // when the timer thread wakes anyway
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::mutex rng_mu_;
  std::mt19937_64 rng_{std::random_device{}()};
  std::thread timer_;
  std::vector<std::thread> workers_;
};

}  // namespace

RenewalScheduler& RenewalScheduler::for_clock(const std::shared_ptr<Clock>& clock) {
  static std::mutex mu;
  static std::map<const Clock*, std::unique_ptr<Scheduler>> schedulers;
  std::lock_guard lock(mu);
  auto& s = schedulers[clock.get()];
  if (!s) s = std::make_unique<Scheduler>(clock);
  return *s;
}

}  // namespace leader::detail
