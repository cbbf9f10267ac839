#include "renewal.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

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
    // Not shared yet: the queue entry made here is what hands the lease to the timer thread
    // (ElectionCore::hold calls this last), so its times are read and set without `held->mu`.
    HeldLease& h = *held;
    const bool renews = h.options().auto_extend;
    if (renews) {
      h.clock_.shift_renewal(jitter(h.clock_.renew_every()));
      lanes_.open(h.store().get());
    }
    const TimePoint due = h.clock_.next_due(renews);
    bool earliest = false;
    {
      std::lock_guard lock(mu_);
      if (renews) max_window_ = std::max(max_window_, early_window(h.clock_.renew_every()));
      earliest = due < planned_wake_;
      if (!spare_.empty()) {  // a node an ended lease left: no allocation
        auto node = std::move(spare_.back());
        spare_.pop_back();
        node.key() = Key{due, ++sequence_};
        node.mapped() = held;
        h.scheduled = queue_.insert(std::move(node)).position;
      } else {
        h.scheduled = queue_.emplace(Key{due, ++sequence_}, held).first;
      }
    }
    if (earliest) cv_.notify_all();  // only an earlier wake-up needs the timer thread
  }

  void reschedule(const std::shared_ptr<HeldLease>& held) override {
    reschedule_all(std::span(&held, 1));
  }

  /// reschedule() of every lease of `leases`, under one lock of the queue (a renewal batch's
  /// leases are re-keyed together: one lane worker does not wait for the other per lease).
  void reschedule_all(std::span<const std::shared_ptr<HeldLease>> leases) {
    if (leases.empty()) return;
    thread_local std::vector<TimePoint> due;
    due.resize(leases.size());
    for (std::size_t i = 0; i < leases.size(); ++i) {
      HeldLease& held = *leases[i];
      std::lock_guard hl(held.mu);
      if (held.finished || held.lost) {
        due[i] = TimePoint::min();  // not watched any more
        continue;
      }
      due[i] = held.clock_.next_due(held.options().auto_extend && !held.renewal.taken());
    }
    bool earliest = false;
    {
      std::lock_guard lock(mu_);
      for (std::size_t i = 0; i < leases.size(); ++i) {
        HeldLease& held = *leases[i];
        if (due[i] == TimePoint::min()) continue;
        if (held.scheduled && (*held.scheduled)->first.first == due[i]) continue;  // there
        earliest = earliest || due[i] < planned_wake_;
        if (!held.scheduled && !spare_.empty()) {  // a node an ended lease left: no allocation
          auto node = std::move(spare_.back());
          spare_.pop_back();
          node.key() = Key{due[i], ++sequence_};
          node.mapped() = leases[i];
          held.scheduled = queue_.insert(std::move(node)).position;
        } else if (!held.scheduled) {
          held.scheduled = queue_.emplace(Key{due[i], ++sequence_}, leases[i]).first;
        } else {
          // The same node under its new key: every renewal re-keys its lease twice (the
          // deadline while in flight, then the next renewal): no search, free or allocation.
          auto node = queue_.extract(*held.scheduled);
          node.key() = Key{due[i], ++sequence_};
          held.scheduled = queue_.insert(std::move(node)).position;
        }
      }
    }
    if (earliest) cv_.notify_all();  // only an earlier wake-up needs the timer thread
  }

  void unwatch(HeldLease& held) override {
    // `finished` is set and no renewal call runs (the caller's lock): a renewal still queued
    // sees `finished` and does nothing.
    {
      std::lock_guard lock(mu_);
      if (held.scheduled) {
        // Kept for the next watch (short leases come and go: run_if_leader's acquire + release
        // then allocates no queue node), up to a few.
        auto node = queue_.extract(*held.scheduled);
        node.mapped().reset();
        if (spare_.size() < kSpareNodes) spare_.push_back(std::move(node));
      }
      held.scheduled.reset();
    }
    if (held.options().auto_extend) lanes_.close(held.store().get());
  }

 private:
  using Key = HeldLease::ScheduleKey;

  /// +-10 % of `period`, so many leases acquired together do not renew together.
  static Duration jitter(Duration period) {
    std::uniform_int_distribution<std::int64_t> d(-period.count() / 10, period.count() / 10);
    thread_local std::mt19937_64 rng{std::random_device{}()};  // no lock shared by the workers
    return Duration(d(rng));
  }

  /// How early a renewal may be sent to join a batch of its store: a fifth of its period (so
  /// batching adds at most a quarter to the renewal rate), at most kMaxEarly.
  static Duration early_window(Duration renew_every) {
    return std::min<Duration>(renew_every / 5, kMaxEarly);
  }

  void timer_loop() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      TimePoint now = clock_->now();
      if (!queue_.empty() && queue_.begin()->first.first <= now) {
        // Everything due now leaves the queue; the leases due within the early window after it
        // stay queued but may join the batch of their store (sweep()).
        std::vector<std::shared_ptr<HeldLease>> due;
        std::vector<std::shared_ptr<HeldLease>> soon;
        const TimePoint horizon = now + max_window_;
        for (auto it = queue_.begin(); it != queue_.end() && it->first.first <= horizon;) {
          auto held = it->second.lock();
          if (it->first.first <= now) {
            if (held) {
              held->scheduled.reset();
              due.push_back(std::move(held));
            }
            it = queue_.erase(it);
          } else {
            if (held) soon.push_back(std::move(held));
            ++it;
          }
        }
        lock.unlock();
        sweep(now, due, soon);
        due.clear();  // the last references may be dropped here: outside the lock
        soon.clear();
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

  using Batch = std::vector<std::shared_ptr<HeldLease>>;

  /// Handles the leases due at `now` (expired: lost; renewal due: into their store's batch), then
  /// adds to each store's batch the leases of that store whose renewal falls due within their
  /// early window, and posts every batch to its store's lane.
  void sweep(TimePoint now, const Batch& due, const Batch& soon) {
    std::map<LeaseStore*, Batch> batches;
    Batch watched;  // re-keyed together below: the deadline stays watched while renewing
    watched.reserve(due.size());
    for (const auto& held : due) {
      bool expired = false;
      bool renew = false;
      {
        std::lock_guard hl(held->mu);
        if (held->finished || held->lost) continue;
        const TimePoint t = clock_->now();
        if (held->clock_.expired(t)) {
          expired = true;
        } else if (held->options().auto_extend && !held->renewal.taken() &&
                   held->clock_.renewal_due(t)) {
          renew = held->renewal.queue();  // one renew call per lease at a time: extend() waits
        }
      }
      if (expired) {
        held->mark_lost("local deadline passed without a confirmed renewal", LeaseOutcome::expired);
        continue;
      }
      if (renew) batches[held->store().get()].push_back(held);
      watched.push_back(held);
    }
    if (batches.empty()) {
      reschedule_all(watched);
      return;
    }
    for (const auto& held : soon) {
      auto it = batches.find(held->store().get());
      if (it == batches.end()) continue;
      {
        std::lock_guard hl(held->mu);
        if (held->finished || held->lost || !held->options().auto_extend || held->renewal.taken())
          continue;
        if (held->clock_.expired(now)) continue;  // handled when its own entry is due
        if (held->clock_.next_renew() - now > early_window(held->clock_.renew_every())) continue;
        held->renewal.queue();
      }
      it->second.push_back(held);
      watched.push_back(held);
    }
    reschedule_all(watched);  // before any renewal of them is posted
    for (auto& [store, batch] : batches) {
      // A large batch goes out as one part per worker of the lane (at most kMaxBatch each), so a
      // store that renews a batch one lease at a time (LeaseStore's default) keeps the lane's
      // parallelism, and a store that batches sends a few round trips at once.
      const std::size_t parts = batch.size() >= kSplitFrom ? StoreLanes::kWorkersPerLane : 1;
      const std::size_t step = std::min(kMaxBatch, (batch.size() + parts - 1) / parts);
      for (std::size_t from = 0; from < batch.size(); from += step) {
        const auto to = std::min(batch.size(), from + step);
        Batch part(batch.begin() + static_cast<std::ptrdiff_t>(from),
                   batch.begin() + static_cast<std::ptrdiff_t>(to));
        lanes_.post(store, [this, part = std::move(part)] { renew_batch(part); });
      }
    }
  }

  /// One renewal about to be sent: what it renews, from the lease's state at the time.
  struct Attempt {
    Lease copy;
    Duration ttl{};
    TimePoint local_deadline{};
  };

  /// Marks `held`'s renew call as under way and copies what it sends; nullopt when the lease
  /// ended meanwhile (its renew slot is then freed).
  static std::optional<Attempt> begin_renewal(HeldLease& held) {
    std::lock_guard hl(held.mu);
    if (held.finished || held.lost) {
      held.renewal.free();
      held.cv().notify_all();
      return std::nullopt;
    }
    held.renewal.start_call();
    return Attempt{held.store_lease_locked(), held.clock_.requested(), held.clock_.deadline()};
  }

  /// Applies one renewal's outcome (nullopt with `error`: unknown) to `held`; true when the
  /// lease is still held and must be rescheduled (the caller does it: a batch at once).
  /// With `renewed`, a `renewed` event is left to the caller (HeldLease::end_renewal).
  [[nodiscard]] static bool end_renewal(const std::shared_ptr<HeldLease>& held, TimePoint sent,
                                        const Attempt& a, const std::optional<Renewal>& outcome,
                                        const std::optional<BackendError>& error,
                                        bool* renewed = nullptr) {
    std::string misfit = held->end_renewal(sent, a.ttl, outcome, renewed);
    if (error) held->publish(EventKind::renew_failed, error->what(), error->code());
    if (!misfit.empty()) {      // kept until the action ends: releasing now would admit a second
      held->mark_lost(misfit);  // leader while this one still runs
      return false;
    }
    const auto status = outcome ? std::optional(outcome->status) : std::nullopt;
    if (status == LeaseStatus::lost) {
      held->mark_lost("renewal refused: the lease was taken over or expired on the server");
      return false;
    }
    if (status == LeaseStatus::ok) {
      std::lock_guard hl(held->mu);
      held->clock_.shift_renewal(jitter(held->clock_.renew_every()));
    }
    return true;
  }

  /// The time a renewal sent at `sent` may take: until the earliest local deadline among the
  /// leases it renews, at most their call timeout.
  static Duration budget_for(TimePoint sent, TimePoint local_deadline, Duration call_timeout) {
    auto left = std::chrono::duration_cast<Duration>(local_deadline - sent);
    return std::clamp(left, Duration{1}, call_timeout);
  }

  void renew_once(const std::shared_ptr<HeldLease>& held) {
    const auto a = begin_renewal(*held);
    if (!a) return;
    const TimePoint sent = clock_->now();
    const auto budget =
        budget_for(sent, a->local_deadline, held->options().effective_call_timeout());
    std::optional<Renewal> outcome;
    std::optional<BackendError> error;
    try {
      outcome = held->store()->renew(a->copy, a->ttl, Deadline::after(budget));
    } catch (const BackendError& e) {  // outcome unknown: the local deadline is bounded by it
      error = e;
    } catch (...) {
      error = BackendError(ErrorCode::internal, std::string(held->store()->scheme()),
                           "renew threw a non-BackendError exception");
    }
    if (end_renewal(held, sent, *a, outcome, error)) reschedule(held);
  }

  /// Renews the leases of one store in one renew_batch call (one renew for a lone lease). One
  /// `sent` stamp, taken before the call, dates every lease's renewal.
  void renew_batch(const Batch& batch) {
    if (batch.size() == 1) {
      renew_once(batch.front());
      return;
    }
    Batch live;
    std::vector<Attempt> attempts;
    live.reserve(batch.size());
    attempts.reserve(batch.size());
    for (const auto& held : batch) {
      if (auto a = begin_renewal(*held)) {
        live.push_back(held);
        attempts.push_back(std::move(*a));
      }
    }
    if (live.empty()) return;
    LeaseStore& store = *live.front()->store();
    const TimePoint sent = clock_->now();
    Duration budget = Duration::max();
    std::vector<RenewalRequest> requests;
    requests.reserve(live.size());
    for (std::size_t i = 0; i < live.size(); ++i) {
      budget = std::min(budget, budget_for(sent, attempts[i].local_deadline,
                                           live[i]->options().effective_call_timeout()));
      requests.push_back({&attempts[i].copy, attempts[i].ttl});
    }
    std::vector<BatchRenewal> out;
    std::optional<BackendError> failed;  // the whole call failed: every outcome unknown
    try {
      out = store.renew_batch(requests, Deadline::after(budget));
      if (out.size() != live.size())
        failed = BackendError(ErrorCode::internal, std::string(store.scheme()),
                              "renew_batch answered " + std::to_string(out.size()) +
                                  " outcomes for " + std::to_string(live.size()) + " leases");
    } catch (const BackendError& e) {
      failed = e;
    } catch (...) {
      failed = BackendError(ErrorCode::internal, std::string(store.scheme()),
                            "renew_batch threw a non-BackendError exception");
    }
    // The bookkeeping of the whole batch at once: one lock of the bus for its `renewed` events,
    // one of the queue to reschedule it (the lane's other worker renews the batch's other half).
    Batch renewed;
    renewed.reserve(live.size());
    std::size_t kept = 0;  // the leases still held move to the front of `live`
    for (std::size_t i = 0; i < live.size(); ++i) {
      bool held = false;
      bool ok = false;
      if (failed) {
        held = end_renewal(live[i], sent, attempts[i], std::nullopt, failed);
      } else if (out[i].error) {
        held = end_renewal(live[i], sent, attempts[i], std::nullopt, out[i].error);
      } else {
        held = end_renewal(live[i], sent, attempts[i], out[i].renewal, std::nullopt, &ok);
      }
      if (ok) renewed.push_back(live[i]);
      if (held) std::swap(live[kept++], live[i]);
    }
    HeldLease::publish_renewed(renewed);
    reschedule_all(std::span(live).first(kept));
  }

  /// The most leases one renew_batch call carries (a store may still split it into chunks).
  static constexpr std::size_t kMaxBatch = 4096;
  /// The smallest batch split between the lane's workers.
  static constexpr std::size_t kSplitFrom = 64;
  /// The longest early window (early_window()).
  static constexpr Duration kMaxEarly = std::chrono::seconds(5);

  std::shared_ptr<Clock> clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  HeldLease::ScheduleQueue queue_;  // one entry per watched lease
  std::uint64_t sequence_ = 0;
  TimePoint planned_wake_ = TimePoint::max();  // when the timer thread wakes anyway
  static constexpr std::size_t kSpareNodes = 64;
  std::vector<HeldLease::ScheduleQueue::node_type> spare_;  // guarded by mu_: emptied nodes
  Duration max_window_{0};  // the longest early window of any lease watched so far
  bool stopping_ = false;
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
