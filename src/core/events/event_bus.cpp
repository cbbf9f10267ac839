// EventBus: per-subscription queues and delivery threads, and the leadership state per lock.

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>

#include "leader/events.hpp"

namespace leader {
namespace detail {

// One subscription: a bounded queue drained by its own thread.
class Subscriber : public std::enable_shared_from_this<Subscriber> {
 public:
  using Fn = std::function<void(const ElectionEvent&)>;
  Subscriber(Fn fn, const SubscribeOptions& options, bool states_only, std::weak_ptr<BusCore> bus)
      : fn_(std::move(fn)),
        capacity_(std::max<std::size_t>(options.queue_capacity, 1)),
        kinds_(options.kinds),
        states_only_(states_only),
        bus_(std::move(bus)) {}

  void start() {
    worker_ = std::thread([self = shared_from_this()] { self->run(); });
  }

  // Queues `event` unless closed or full (then counts a drop). Never blocks on the listener.
  void offer(const std::shared_ptr<const ElectionEvent>& event) {
    if (states_only_ && !event->state) return;
    if (!kinds_.empty() && std::find(kinds_.begin(), kinds_.end(), event->kind) == kinds_.end())
      return;
    bool wake = false;
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      if (queue_.size() >= capacity_) {
        ++dropped_;
        return;
      }
      queue_.push_back(event);
      wake = worker_waiting_;  // a busy worker finds the event when it looks again
    }
    if (wake) cv_.notify_all();
  }

  void close() noexcept;

  bool wait_idle(Duration timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return closed_ || (queue_.empty() && !busy_); });
  }

  bool active() const {
    std::lock_guard lock(mu_);
    return !closed_;
  }
  std::uint64_t delivered() const {
    std::lock_guard lock(mu_);
    return delivered_;
  }
  std::uint64_t dropped() const {
    std::lock_guard lock(mu_);
    return dropped_;
  }
  std::uint64_t failures() const {
    std::lock_guard lock(mu_);
    return failures_;
  }

 private:
  void run() {
    std::unique_lock lock(mu_);
    while (true) {
      while (!closed_ && queue_.empty()) {
        worker_waiting_ = true;
        cv_.wait(lock);
        worker_waiting_ = false;
      }
      if (closed_) {
        // Ends the listener here: what it captured is released when the subscription ends, even
        // while SubscriptionCounters keep this object alive (no cycle through a capture).
        Fn ended = std::move(fn_);
        lock.unlock();
        return;
      }
      auto event = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      bool threw = false;
      try {
        fn_(*event);
      } catch (...) {  // a listener's failure is counted, never propagated
        threw = true;
      }
      event.reset();
      lock.lock();
      busy_ = false;
      ++delivered_;
      if (threw) ++failures_;
      cv_.notify_all();
    }
  }

  Fn fn_;
  const std::size_t capacity_;
  const std::vector<EventKind> kinds_;
  const bool states_only_;
  std::weak_ptr<BusCore> bus_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<const ElectionEvent>> queue_;
  bool closed_ = false;
  bool busy_ = false;
  bool worker_waiting_ = false;  // the worker sleeps on cv_ for an event
  std::uint64_t delivered_ = 0;
  std::uint64_t dropped_ = 0;
  std::uint64_t failures_ = 0;
  std::thread worker_;
};

// The shared state of a bus; subscribers keep a weak reference to it.
class BusCore {
 public:
  struct Hold {
    std::uint64_t token;
    int slot;
    TimePoint deadline;
  };
  // The state of one lock without its name (the map's key is the one copy of the name: 32 bytes
  // less per lock than a LeadershipState).
  struct LockEntry {
    std::vector<Hold> holds;
    std::uint64_t fencing_token = 0;  // of the latest held lease (of the last one when not held)
    TimePoint deadline{};
    std::uint64_t version = 0;
    int slot = 0;
  };
  // The state of the lock at `it`, with its name.
  template <class It>
  static LeadershipState named(const It& it) {
    const LockEntry& e = it->second;
    return LeadershipState{.lock = it->first,
                           .held = !e.holds.empty(),
                           .holds = static_cast<int>(e.holds.size()),
                           .fencing_token = e.fencing_token,
                           .slot = e.slot,
                           .deadline = e.deadline,
                           .version = e.version};
  }
  struct Notification {
    std::string lock;
    std::uint64_t after;
    EventBus::StateWatcher once;
  };

  // Lock names hashed as string_views, so a publication looks its lock up without a copy.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const noexcept {
      return std::hash<std::string_view>{}(name);
    }
  };

  mutable std::mutex mu;
  std::condition_variable_any changed;
  // Hashed, not ordered: every renewal of every held lease looks its lock up here, and names
  // often share a long prefix ("tenant:acme:..."), which an ordered map compares ~log2(n) times
  // (issue 14: a fifth of the core's CPU per renewal at 100,000 leases). states() sorts.
  std::unordered_map<std::string, LockEntry, NameHash, std::equal_to<>> locks;
  std::vector<std::shared_ptr<Subscriber>> subscribers;
  std::map<std::uint64_t, Notification> notifications;
  std::uint64_t sequence = 0;
  std::uint64_t next_notification = 0;
  std::size_t waiters = 0;  // threads blocked in wait_state_change (guarded by mu)

  void remove(const Subscriber* s) {
    std::lock_guard lock(mu);
    std::erase_if(subscribers, [&](const auto& p) { return p.get() == s; });
  }

  // Applies a lease event (`kind` of the lease `token`/`slot` of `lock`) to the lock's state;
  // true when the state changed, then `out` (when not null) receives the new state.
  bool apply_locked(EventKind kind, std::string_view lock, bool fail_open, std::uint64_t token,
                    int slot, TimePoint deadline, LeadershipState* out,
                    std::atomic<void*>* cached = nullptr) {
    const bool lease_event = kind == EventKind::elected || kind == EventKind::renewed ||
                             kind == EventKind::lost || kind == EventKind::released;
    if (!lease_event || fail_open) return false;
    // Entries are never erased and a node's address survives rehashing: a remembered slot stays
    // this lock's.
    using Slot = decltype(locks)::value_type;
    auto* found =
        cached != nullptr ? static_cast<Slot*>(cached->load(std::memory_order_relaxed)) : nullptr;
    if (found == nullptr) {
      auto it = locks.find(lock);
      if (it == locks.end()) it = locks.emplace(std::string(lock), LockEntry{}).first;
      found = &*it;
      if (cached != nullptr) cached->store(found, std::memory_order_relaxed);
    }
    LockEntry& entry = found->second;
    auto& holds = entry.holds;
    auto same = [&](const Hold& h) { return h.token == token && h.slot == slot; };
    auto it = std::find_if(holds.begin(), holds.end(), same);
    switch (kind) {
      case EventKind::elected:
        if (it != holds.end()) return false;
        holds.push_back({token, slot, deadline});
        break;
      case EventKind::renewed:
        if (it == holds.end() || it->deadline == deadline) return false;
        it->deadline = deadline;
        break;
      default:
        if (it == holds.end()) return false;
        holds.erase(it);
        break;
    }
    const Hold latest = holds.empty() ? Hold{token, slot, {}} : holds.back();
    entry.fencing_token = latest.token;
    entry.slot = latest.slot;
    entry.deadline = latest.deadline;
    ++entry.version;
    if (out != nullptr) *out = named(found);
    return true;
  }

  // Publishes under `mu` (held by the caller): sequence, state, notifications to fire, queues.
  // `make` builds the event only when a subscriber or a notification needs it. Returns true
  // when a blocked wait_state_change must be woken.
  template <class Make>
  bool publish_locked(EventKind kind, std::string_view lock, bool fail_open, std::uint64_t token,
                      int slot, TimePoint deadline, Make&& make,
                      std::vector<EventBus::StateWatcher>& fire, LeadershipState& changed,
                      std::atomic<void*>* cached = nullptr) {
    const std::uint64_t seq = ++sequence;
    // Only subscribers and one-shot notifications need a copy of the new state; a blocked
    // wait_state_change re-reads it itself (counted in `waiters`, under `mu`).
    const bool wanted = !subscribers.empty() || !notifications.empty();
    const bool state_changed = apply_locked(kind, lock, fail_open, token, slot, deadline,
                                            wanted ? &changed : nullptr, cached);
    if (state_changed && !notifications.empty()) {
      for (auto it = notifications.begin(); it != notifications.end();) {
        if (it->second.lock == lock && changed.version > it->second.after) {
          fire.push_back(std::move(it->second.once));
          it = notifications.erase(it);
        } else {
          ++it;
        }
      }
    }
    if (!subscribers.empty()) {
      ElectionEvent event = make();
      if (event.at == WallTime{}) event.at = std::chrono::system_clock::now();
      event.sequence = seq;
      if (state_changed) event.state = changed;
      // Queued under the bus lock, so every subscriber sees the publication order.
      auto shared = std::make_shared<const ElectionEvent>(std::move(event));
      for (const auto& s : subscribers) s->offer(shared);
    }
    return state_changed && waiters > 0;
  }
};

void Subscriber::close() noexcept {
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  if (auto bus = bus_.lock()) bus->remove(this);
  if (!worker_.joinable()) return;
  if (worker_.get_id() == std::this_thread::get_id()) {
    worker_.detach();  // unsubscribed from its own callback: it ends after this call returns
  } else {
    worker_.join();
  }
}

}  // namespace detail

std::string_view to_string(EventKind kind) noexcept {
  switch (kind) {
    case EventKind::elected:
      return "elected";
    case EventKind::renewed:
      return "renewed";
    case EventKind::renew_failed:
      return "renew_failed";
    case EventKind::released:
      return "released";
    case EventKind::lost:
      return "lost";
    case EventKind::skipped:
      return "skipped";
    case EventKind::backend_error:
      return "backend_error";
    case EventKind::candidate_registered:
      return "candidate_registered";
    case EventKind::candidate_unregistered:
      return "candidate_unregistered";
    case EventKind::candidate_picked:
      return "candidate_picked";
    case EventKind::firing_started:
      return "firing_started";
    case EventKind::firing_finished:
      return "firing_finished";
    case EventKind::firing_skipped:
      return "firing_skipped";
    case EventKind::firing_misfired:
      return "firing_misfired";
  }
  return "unknown";
}

std::string_view to_string(FiringOutcome outcome) noexcept {
  switch (outcome) {
    case FiringOutcome::ran:
      return "ran";
    case FiringOutcome::failed:
      return "failed";
    case FiringOutcome::ran_elsewhere:
      return "ran_elsewhere";
    case FiringOutcome::skipped_busy:
      return "skipped_busy";
    case FiringOutcome::skipped_late:
      return "skipped_late";
    case FiringOutcome::backend_error:
      return "backend_error";
    case FiringOutcome::cancelled:
      return "cancelled";
  }
  return "unknown";
}

std::string_view to_string(LeaseOutcome outcome) noexcept {
  switch (outcome) {
    case LeaseOutcome::completed:
      return "completed";
    case LeaseOutcome::failed:
      return "failed";
    case LeaseOutcome::lost:
      return "lost";
    case LeaseOutcome::expired:
      return "expired";
  }
  return "unknown";
}

Subscription& Subscription::operator=(Subscription&& other) noexcept {
  if (this != &other) {
    unsubscribe();
    subscriber_ = std::move(other.subscriber_);
  }
  return *this;
}

Subscription::~Subscription() { unsubscribe(); }

void Subscription::unsubscribe() noexcept {
  if (subscriber_) subscriber_->close();
}
bool Subscription::active() const noexcept { return subscriber_ && subscriber_->active(); }
std::uint64_t Subscription::delivered() const noexcept {
  return subscriber_ ? subscriber_->delivered() : 0;
}
std::uint64_t Subscription::dropped() const noexcept {
  return subscriber_ ? subscriber_->dropped() : 0;
}
std::uint64_t Subscription::failures() const noexcept {
  return subscriber_ ? subscriber_->failures() : 0;
}
bool Subscription::wait_idle(Duration timeout) const {
  return !subscriber_ || subscriber_->wait_idle(timeout);
}
SubscriptionCounters Subscription::counters() const noexcept {
  return SubscriptionCounters(subscriber_);
}

std::uint64_t SubscriptionCounters::delivered() const noexcept {
  return subscriber_ ? subscriber_->delivered() : 0;
}
std::uint64_t SubscriptionCounters::dropped() const noexcept {
  return subscriber_ ? subscriber_->dropped() : 0;
}
std::uint64_t SubscriptionCounters::failures() const noexcept {
  return subscriber_ ? subscriber_->failures() : 0;
}
bool SubscriptionCounters::active() const noexcept { return subscriber_ && subscriber_->active(); }

EventBus::EventBus() : core_(std::make_shared<detail::BusCore>()) {}

EventBus::~EventBus() {
  std::lock_guard lock(core_->mu);
  core_->subscribers.clear();  // their Subscriptions close them; nothing is delivered any more
}

namespace {
Subscription add_subscriber(const std::shared_ptr<detail::BusCore>& core, detail::Subscriber::Fn fn,
                            const SubscribeOptions& options, bool states_only) {
  if (!fn) throw InvalidArgument("EventBus: the listener is empty");
  auto sub = std::make_shared<detail::Subscriber>(std::move(fn), options, states_only, core);
  sub->start();
  std::lock_guard lock(core->mu);
  core->subscribers.push_back(sub);
  return Subscription(std::move(sub));
}
}  // namespace

Subscription EventBus::subscribe(Listener listener, const SubscribeOptions& options) {
  return add_subscriber(core_, std::move(listener), options, false);
}

Subscription EventBus::watch_state(StateWatcher watcher, const SubscribeOptions& options) {
  if (!watcher) throw InvalidArgument("EventBus::watch_state: the watcher is empty");
  return add_subscriber(
      core_, [w = std::move(watcher)](const ElectionEvent& e) { w(*e.state); }, options, true);
}

LeadershipState EventBus::state(std::string_view lock) const {
  std::lock_guard guard(core_->mu);
  auto it = core_->locks.find(lock);
  if (it == core_->locks.end()) return LeadershipState{.lock = std::string(lock)};
  return detail::BusCore::named(it);
}

std::vector<LeadershipState> EventBus::states() const {
  std::vector<LeadershipState> out;
  {
    std::lock_guard guard(core_->mu);
    out.reserve(core_->locks.size());
    for (auto it = core_->locks.begin(); it != core_->locks.end(); ++it)
      out.push_back(detail::BusCore::named(it));
  }
  std::sort(out.begin(), out.end(),
            [](const LeadershipState& a, const LeadershipState& b) { return a.lock < b.lock; });
  return out;
}

std::optional<LeadershipState> EventBus::wait_state_change(std::string_view lock,
                                                           std::uint64_t after_version,
                                                           const std::stop_token& stop) const {
  std::unique_lock guard(core_->mu);
  auto version = [&] {
    auto it = core_->locks.find(lock);
    return it == core_->locks.end() ? std::uint64_t{0} : it->second.version;
  };
  ++core_->waiters;  // under mu: a publisher that changes the state after this wakes us
  const bool changed = core_->changed.wait(guard, stop, [&] { return version() > after_version; });
  --core_->waiters;
  if (!changed) return std::nullopt;
  return detail::BusCore::named(core_->locks.find(lock));
}

std::uint64_t EventBus::notify_state_change(std::string_view lock, std::uint64_t after_version,
                                            StateWatcher once) {
  if (!once) throw InvalidArgument("EventBus::notify_state_change: the callback is empty");
  std::unique_lock guard(core_->mu);
  const std::uint64_t id = ++core_->next_notification;
  auto it = core_->locks.find(lock);
  if (it != core_->locks.end() && it->second.version > after_version) {
    LeadershipState now = detail::BusCore::named(it);
    guard.unlock();
    once(now);
    return id;
  }
  core_->notifications.emplace(
      id, detail::BusCore::Notification{std::string(lock), after_version, std::move(once)});
  return id;
}

bool EventBus::cancel_state_notification(std::uint64_t id) {
  std::lock_guard guard(core_->mu);
  return core_->notifications.erase(id) > 0;
}

namespace {
void fire_notifications(std::vector<EventBus::StateWatcher>& fire, const LeadershipState& changed) {
  for (auto& once : fire) {
    try {
      once(changed);
    } catch (...) {  // a waiter's failure never reaches the publisher
    }
  }
}
}  // namespace

void EventBus::publish(ElectionEvent event) {
  if (event.at == WallTime{}) event.at = std::chrono::system_clock::now();
  std::vector<EventBus::StateWatcher> fire;
  LeadershipState changed;
  bool wake = false;
  {
    std::lock_guard guard(core_->mu);
    wake = core_->publish_locked(
        event.kind, event.lock, event.lease.fail_open, event.lease.fencing_token, event.lease.slot,
        event.deadline, [&]() -> ElectionEvent { return std::move(event); }, fire, changed);
  }
  if (wake) core_->changed.notify_all();
  fire_notifications(fire, changed);
}

void EventBus::publish_lease(EventKind kind, const LeaseInfo& lease, TimePoint deadline,
                             EventMaker make, std::atomic<void*>* slot) {
  std::vector<EventBus::StateWatcher> fire;
  LeadershipState changed;
  bool wake = false;
  {
    std::lock_guard guard(core_->mu);
    wake = core_->publish_locked(
        kind, lease.lock, lease.fail_open, lease.fencing_token, lease.slot, deadline,
        [&]() -> ElectionEvent { return make.make(make.context); }, fire, changed, slot);
  }
  if (wake) core_->changed.notify_all();
  fire_notifications(fire, changed);
}

void EventBus::publish_leases(EventKind kind, std::span<const LeasePublication> items) {
  struct Fired {
    std::vector<EventBus::StateWatcher> fire;
    LeadershipState changed;
  };
  std::vector<Fired> fired;  // rare: only items that completed a pending notification
  std::vector<EventBus::StateWatcher> fire;
  LeadershipState changed;
  bool wake = false;
  {
    std::lock_guard guard(core_->mu);
    for (const LeasePublication& p : items) {
      const LeaseInfo& lease = *p.lease;
      wake = core_->publish_locked(
                 kind, lease.lock, lease.fail_open, lease.fencing_token, lease.slot, p.deadline,
                 [&]() -> ElectionEvent { return p.make.make(p.make.context); }, fire, changed,
                 p.slot) ||
             wake;
      if (!fire.empty()) fired.push_back({std::exchange(fire, {}), changed});
    }
  }
  if (wake) core_->changed.notify_all();
  for (auto& f : fired) fire_notifications(f.fire, f.changed);
}

std::size_t EventBus::subscribers() const {
  std::lock_guard guard(core_->mu);
  return core_->subscribers.size();
}

}  // namespace leader
