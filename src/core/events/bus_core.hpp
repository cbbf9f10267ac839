#pragma once
// Internal: the shared state of an EventBus (BusCore: the leadership state per lock, the
// subscribers, the one-shot notifications) and one subscription's queue and delivery thread
// (Subscriber). Only event_bus.cpp includes it.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "leader/events.hpp"

namespace leader::detail {

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
  // (a fifth of the core's CPU per renewal at 100,000 leases). states() sorts.
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

}  // namespace leader::detail
