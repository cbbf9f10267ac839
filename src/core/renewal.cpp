#include "renewal.hpp"

#include <algorithm>
#include <map>
#include <random>
#include <thread>

#include "store_lanes.hpp"

namespace leader::detail {
namespace {

class Scheduler final : public RenewalScheduler {
 public:
  explicit Scheduler(std::shared_ptr<Clock> clock) : clock_(std::move(clock)) {
    timer_ = std::thread([this] { timer_loop(); });
  }

  ~Scheduler() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    timer_.join();
    // lanes_ is destroyed first (declared last): it joins the workers while the rest still lives.
  }

  void watch(const std::shared_ptr<HeldLease>& held) override {
    if (held->options.auto_extend) {
      {
        std::lock_guard hl(held->mu);
        held->next_renew += jitter(held->renew_every);
      }
      lanes_.open(held->store.get());
    }
    reschedule(held);
  }

  void reschedule(const std::shared_ptr<HeldLease>& held) override {
    TimePoint due;
    {
      std::lock_guard hl(held->mu);
      if (held->finished || held->lost) return;
      due = held->local_deadline;
      if (held->options.auto_extend && !held->renewing) due = std::min(due, held->next_renew);
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
      // A renewal still queued sees `finished` and does nothing; only a running one is waited for.
      held.cv.wait(hl, [&] { return !held.calling; });
    }
    {
      std::lock_guard lock(mu_);
      if (held.scheduled) queue_.erase(*held.scheduled);
      held.scheduled.reset();
    }
    if (held.options.auto_extend) lanes_.close(held.store.get());
  }

 private:
  using Key = HeldLease::ScheduleKey;

  /// +-10 % of `period`, so many leases acquired together do not renew together.
  Duration jitter(Duration period) {
    std::uniform_int_distribution<std::int64_t> d(-period.count() / 10, period.count() / 10);
    std::lock_guard lock(rng_mu_);
    return Duration(d(rng_));
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
      } else if (held->options.auto_extend && !held->renewing && now >= held->next_renew) {
        renew = true;
        held->renewing = true;  // one renew call per lease at a time: extend() waits for it
      }
    }
    if (expired) {
      held->mark_lost("local deadline passed without a confirmed renewal", LeaseOutcome::expired);
      return;
    }
    if (renew) lanes_.post(held->store.get(), [this, held] { renew_once(held); });
    reschedule(held);  // the deadline stays watched while the renewal is in flight
  }

  void renew_once(const std::shared_ptr<HeldLease>& held) {
    Lease copy;
    Duration ttl;
    TimePoint local_deadline;
    {
      std::lock_guard hl(held->mu);
      if (held->finished || held->lost) {
        held->renewing = false;
        held->cv.notify_all();
        return;
      }
      held->calling = true;
      copy = held->lease;
      ttl = held->ttl;
      local_deadline = held->local_deadline;
    }
    const TimePoint sent = clock_->now();
    auto left = std::chrono::duration_cast<Duration>(local_deadline - sent);
    auto budget = std::clamp(left, Duration{1}, held->options.effective_call_timeout());
    std::optional<Renewal> outcome;
    std::optional<BackendError> error;
    try {
      outcome = held->store->renew(copy, ttl, Deadline::after(budget));
    } catch (const BackendError& e) {  // outcome unknown: the local deadline is bounded by it
      error = e;
    } catch (...) {
      error = BackendError(ErrorCode::internal, std::string(held->store->scheme()),
                           "renew threw a non-BackendError exception");
    }
    std::string misfit = held->end_renewal(sent, ttl, copy, outcome);
    if (error) held->publish(EventKind::renew_failed, error->what(), error->code());
    if (!misfit.empty()) {      // kept until the action ends: releasing now would admit a second
      held->mark_lost(misfit);  // leader while this one still runs
      return;
    }
    const auto status = outcome ? std::optional(outcome->status) : std::nullopt;
    if (status == LeaseStatus::lost) {
      held->mark_lost("renewal refused: the lease was taken over or expired on the server");
      return;
    }
    if (status == LeaseStatus::ok) {
      std::lock_guard hl(held->mu);
      held->next_renew += jitter(held->renew_every);
    }
    reschedule(held);
  }

  std::shared_ptr<Clock> clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, std::weak_ptr<HeldLease>> queue_;  // one entry per watched lease
  std::uint64_t sequence_ = 0;
  TimePoint planned_wake_ = TimePoint::max();  // when the timer thread wakes anyway
  bool stopping_ = false;
  std::mutex rng_mu_;
  std::mt19937_64 rng_{std::random_device{}()};
  std::thread timer_;
  StoreLanes lanes_;  // renewal workers per store; last, so destroyed (joined) first
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
