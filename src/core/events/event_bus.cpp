// EventBus: per-subscription queues and delivery threads, and the leadership state per lock
// (their classes: bus_core.hpp).

#include <algorithm>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>

#include "bus_core.hpp"
#include "leader/events.hpp"
#include "lease_publishing.hpp"

namespace leader {
namespace detail {

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

std::size_t EventBus::subscribers() const {
  std::lock_guard guard(core_->mu);
  return core_->subscribers.size();
}

namespace detail {

void LeasePublishing::publish_lease(EventBus& bus, EventKind kind, const LeaseInfo& lease,
                                    TimePoint deadline, EventMaker make, BusSlot* slot) {
  std::vector<EventBus::StateWatcher> fire;
  LeadershipState changed;
  bool wake = false;
  {
    std::lock_guard guard(bus.core_->mu);
    wake = bus.core_->publish_locked(
        kind, lease.lock, lease.fail_open, lease.fencing_token, lease.slot, deadline,
        [&]() -> ElectionEvent { return make.make(make.context); }, fire, changed, slot);
  }
  if (wake) bus.core_->changed.notify_all();
  fire_notifications(fire, changed);
}

void LeasePublishing::publish_leases(EventBus& bus, EventKind kind,
                                     std::span<const LeasePublication> items) {
  struct Fired {
    std::vector<EventBus::StateWatcher> fire;
    LeadershipState changed;
  };
  std::vector<Fired> fired;  // rare: only items that completed a pending notification
  std::vector<EventBus::StateWatcher> fire;
  LeadershipState changed;
  bool wake = false;
  {
    std::lock_guard guard(bus.core_->mu);
    for (const LeasePublication& p : items) {
      const LeaseInfo& lease = *p.lease;
      wake = bus.core_->publish_locked(
                 kind, lease.lock, lease.fail_open, lease.fencing_token, lease.slot, p.deadline,
                 [&]() -> ElectionEvent { return p.make.make(p.make.context); }, fire, changed,
                 p.slot) ||
             wake;
      if (!fire.empty()) fired.push_back({std::exchange(fire, {}), changed});
    }
  }
  if (wake) bus.core_->changed.notify_all();
  for (auto& f : fired) fire_notifications(f.fire, f.changed);
}

}  // namespace detail

}  // namespace leader
