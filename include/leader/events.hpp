#pragma once
/// @file events.hpp
/// The event bus of an elector: typed election events delivered to any number of listeners, and a
/// state watch (this process's leadership of each lock).
///
/// What is NOT guaranteed: that a listener sees every event. Each subscription has a bounded
/// queue; when it is full the new event is dropped for that subscription and counted
/// (Subscription::dropped()). Events are never delivered to a subscription after unsubscribe()
/// returned (except to a callback that unsubscribes itself, which finishes its current call).
///
/// Threads: publishing never blocks on a listener: it updates the state, appends to each
/// subscription's queue and returns. Each subscription has its own delivery thread, so a slow or
/// throwing listener never delays an election, a renewal or another listener; its exceptions are
/// caught and counted (Subscription::failures()). One subscription sees events in publication
/// order. A listener may call back into the elector, the bus, or unsubscribe itself.
///
/// ElectionListener (ElectorHooks::listener) is the older synchronous form, kept as it was:
/// on_elected, on_revoked and on_skipped run on the thread that called run_if_leader; on_lost runs
/// on the renewal scheduler's thread (or the thread that called extend()) and must not block.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "leader/errors.hpp"
#include "leader/result.hpp"
#include "leader/store.hpp"

namespace leader {

/// Receives election events synchronously (the older form; prefer EventBus::subscribe).
class ElectionListener {
 public:
  virtual ~ElectionListener() = default;
  /// The lease was acquired; the action is about to run.
  virtual void on_elected(const LeaseInfo& /*lease*/) {}
  /// The action finished and the lease was released (or left to expire after min_lease_time).
  virtual void on_revoked(const LeaseInfo& /*lease*/) {}
  /// The action did not run.
  virtual void on_skipped(const std::string& /*lock*/, const Skipped& /*why*/) {}
  /// The lease was lost while the action ran; its stop_token has fired.
  virtual void on_lost(const LeaseInfo& /*lease*/, const std::string& /*reason*/) {}
};

/// What happened.
enum class EventKind : std::uint8_t {
  elected,               ///< a lease was acquired (lease, deadline)
  renewed,               ///< a renewal was confirmed (lease, new deadline)
  renew_failed,          ///< a renewal failed with an unknown outcome (error_code, detail)
  released,              ///< a held lease ended and was released (outcome, detail = error)
  lost,                  ///< the lease was lost while held; its stop_token fired (outcome, detail)
  skipped,               ///< a call did not run its action (skip_reason, detail)
  backend_error,         ///< acquiring failed with a store error (error_code, detail)
  candidate_registered,  ///< this replica (re)registered as a candidate (strategic)
  candidate_unregistered,  ///< this replica removed its registration (strategic)
  candidate_picked,        ///< a strategy picked a winner (detail = its node id, or empty)
  // Scheduler firings (leader::Scheduler publishes them on its elector's bus; `lock` is the task
  // name, `firing` says which instant; docs/scheduler.md):
  firing_started,   ///< this replica got the task's lease and starts the task (lease, firing)
  firing_finished,  ///< the task returned or threw (firing, outcome, detail = the error)
  firing_skipped,   ///< the firing did not run here: ran elsewhere, busy, backend error, cancelled
  firing_misfired,  ///< the firing's window passed before this replica could start it
};

/// "elected", "renewed", ...
std::string_view to_string(EventKind kind) noexcept;

/// How a held lease ended.
enum class LeaseOutcome : std::uint8_t {
  completed,  ///< the action returned
  failed,     ///< the action threw
  lost,       ///< the store refused a renewal (taken over or expired there), or a grant misfit
  expired,    ///< the local deadline passed without a confirmed renewal
};

/// "completed", "failed", "lost", "expired".
std::string_view to_string(LeaseOutcome outcome) noexcept;

/// How one scheduled firing went on this replica (leader::Scheduler, docs/scheduler.md).
enum class FiringOutcome : std::uint8_t {
  ran,            ///< this replica ran it and the task returned
  failed,         ///< this replica ran it and the task threw
  ran_elsewhere,  ///< another replica holds the task's lock (contention)
  skipped_busy,   ///< the previous firing of this task was still running here
  skipped_late,   ///< the firing's window passed before this replica could start it (misfire)
  backend_error,  ///< the store failed; nothing ran
  cancelled,      ///< the scheduler was stopping
};

/// "ran", "failed", "ran_elsewhere", ...
std::string_view to_string(FiringOutcome outcome) noexcept;

/// The scheduler's part of a firing event.
struct FiringEventInfo {
  std::optional<WallTime> instant{};  ///< the scheduled instant; empty for fixed_delay tasks
  bool catch_up = false;              ///< a run_once catch-up firing
  /// firing_finished, firing_skipped, firing_misfired: how it went (ran while it runs).
  FiringOutcome outcome = FiringOutcome::ran;
};

/// This process's leadership of one lock, as seen by the electors publishing to one bus.
struct LeadershipState {
  std::string lock{};
  bool held = false;                ///< some lease of this lock is held and not lost
  int holds = 0;                    ///< leases of this lock held now (group electors: several)
  std::uint64_t fencing_token = 0;  ///< of the latest held lease (of the last one when not held)
  int slot = 0;                     ///< of the latest held lease
  TimePoint deadline{};             ///< local deadline of the latest held lease (elector's clock)
  std::uint64_t version = 0;        ///< increases with every change of this lock's state; 0 = never
};

/// One election event.
struct ElectionEvent {
  EventKind kind = EventKind::elected;
  std::string lock{};                       ///< full lock name (candidate events: the group)
  LeaseInfo lease{};                        ///< lease events: the lease
  WallTime at{};                            ///< when it was published (system clock)
  WallTime started{};                       ///< lease events: when the lease was acquired
  TimePoint deadline{};                     ///< elected, renewed: the new local deadline
  std::optional<LeaseOutcome> outcome{};    ///< released, lost
  std::optional<SkipReason> skip_reason{};  ///< skipped
  std::optional<ErrorCode> error_code{};    ///< backend_error, renew_failed (when known)
  std::string detail{};                     ///< reason, error text, or picked node id
  std::optional<LeadershipState> state{};   ///< the lock's state after the event, if it changed
  std::optional<FiringEventInfo> firing{};  ///< firing_* events
  std::uint64_t sequence = 0;               ///< per bus, strictly increasing
};

/// Options of one subscription.
struct SubscribeOptions {
  /// Events queued for this listener at most; further ones are dropped and counted (>= 1).
  std::size_t queue_capacity = 1024;
  /// Only events of these kinds are queued (and counted); empty = every kind.
  std::vector<EventKind> kinds{};
};

namespace detail {
struct LeasePublishing;  // the engine's lease events (src/core/events/lease_publishing.hpp)
class Subscriber;
class BusCore;
}  // namespace detail

/// A read-only view of a subscription's counters, valid after the subscription ended (the last
/// values stay readable). Copyable; a default-constructed one reads 0.
class SubscriptionCounters {
 public:
  SubscriptionCounters() = default;
  explicit SubscriptionCounters(std::shared_ptr<const detail::Subscriber> subscriber)
      : subscriber_(std::move(subscriber)) {}
  /// Events handed to the listener.
  [[nodiscard]] std::uint64_t delivered() const noexcept;
  /// Events dropped because the queue was full.
  [[nodiscard]] std::uint64_t dropped() const noexcept;
  /// Calls of the listener that threw.
  [[nodiscard]] std::uint64_t failures() const noexcept;
  /// True until the subscription ended (its counters no longer change).
  [[nodiscard]] bool active() const noexcept;

 private:
  std::shared_ptr<const detail::Subscriber> subscriber_;
};

/// A subscription to an EventBus; unsubscribes when destroyed. Move-only.
class [[nodiscard]] Subscription {
 public:
  Subscription() = default;
  explicit Subscription(std::shared_ptr<detail::Subscriber> subscriber)
      : subscriber_(std::move(subscriber)) {}
  Subscription(Subscription&&) noexcept = default;
  Subscription& operator=(Subscription&& other) noexcept;
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;
  ~Subscription();

  /// Stops delivery (idempotent). Queued events are discarded; waits for a callback in progress
  /// unless called from that callback.
  void unsubscribe() noexcept;
  /// True until unsubscribe().
  [[nodiscard]] bool active() const noexcept;
  /// Events handed to the listener (whether or not it threw).
  [[nodiscard]] std::uint64_t delivered() const noexcept;
  /// Events dropped because the queue was full.
  [[nodiscard]] std::uint64_t dropped() const noexcept;
  /// Calls of the listener that threw.
  [[nodiscard]] std::uint64_t failures() const noexcept;
  /// Waits until every event queued so far was handled; false on timeout (real time).
  bool wait_idle(Duration timeout) const;
  /// Its counters, readable from anywhere for as long as needed (metrics exporters).
  [[nodiscard]] SubscriptionCounters counters() const noexcept;

 private:
  std::shared_ptr<detail::Subscriber> subscriber_;
};

/// Publishes election events to subscribers and keeps the leadership state per lock. Thread-safe.
/// Every elector has one (Elector::events()); pass one to several electors through
/// ElectorHooks::events to see them together.
class EventBus {
 public:
  /// A listener of events.
  using Listener = std::function<void(const ElectionEvent&)>;
  /// A watcher of state changes.
  using StateWatcher = std::function<void(const LeadershipState&)>;

  EventBus();
  ~EventBus();
  EventBus(const EventBus&) = delete;
  EventBus& operator=(const EventBus&) = delete;

  /// Delivers every later event to `listener` on its own thread (see the file comment).
  Subscription subscribe(Listener listener, const SubscribeOptions& options = {});
  /// Delivers every later state change to `watcher` on its own thread.
  Subscription watch_state(StateWatcher watcher, const SubscribeOptions& options = {});
  /// The current state of `lock` (held false, version 0 when never seen).
  [[nodiscard]] LeadershipState state(std::string_view lock) const;
  /// The states of every lock seen so far, ordered by lock name.
  [[nodiscard]] std::vector<LeadershipState> states() const;
  /// Blocks until the state of `lock` has a version above `after_version`, and returns it;
  /// nullopt when `stop` is requested first.
  std::optional<LeadershipState> wait_state_change(std::string_view lock,
                                                   std::uint64_t after_version,
                                                   const std::stop_token& stop) const;
  /// Calls `once` exactly once with the state of `lock` when its version is above
  /// `after_version` (at once, on this thread, when it already is; else on the publishing
  /// thread, so `once` must not block). Returns an id for cancel_state_notification().
  std::uint64_t notify_state_change(std::string_view lock, std::uint64_t after_version,
                                    StateWatcher once);
  /// Cancels a pending notification; true when it had not fired (it never will).
  bool cancel_state_notification(std::uint64_t id);
  /// Publishes `event`: stamps `at` and `sequence`, updates the state, queues it for every
  /// subscriber. Never blocks on a listener. Used by electors and schedulers.
  void publish(ElectionEvent event);
  /// The number of active subscriptions.
  [[nodiscard]] std::size_t subscribers() const;

 private:
  friend struct detail::LeasePublishing;
  std::shared_ptr<detail::BusCore> core_;
};

}  // namespace leader
