#pragma once
/// @file campaign.hpp
/// Campaign: continuous leadership (hot standby). Every replica campaigns; the one elected stays
/// leader, its lease renewed, until it stops, resigns or loses the lease; then another takes over
/// and this one campaigns again. The shape of client-go's LeaderElector.Run, Curator's
/// LeaderLatch / LeaderSelector and etcd's Election.Campaign (docs/campaign.md compares them).
///
/// What is NOT guaranteed: that no two replicas are ever active at once. A leader paused longer
/// than its safety margin (GC, SIGSTOP) or whose clock rate drifts can still act after the store
/// gave the lease to a standby; the fencing token in on_started_leading's context is what lets a
/// protected resource reject it. What is guaranteed: the context's stop_token fires at the local
/// deadline of the elector (the same lost-lease machinery as run_if_leader: send time of the last
/// confirmed renewal + granted ttl - safety margin), before the server can expire the lease; a
/// standby takes over at most about lease_time + retry_period + one store call after the leader
/// died (the server must first expire the lease), at once after a clean step-down.
///
/// Threads: run() campaigns on the calling thread; start() on a thread of the campaign's own;
/// run_async() on a BlockingPool thread. on_started_leading and on_stopped_leading run on that
/// campaign thread, in order, one term at a time; on_new_leader runs on the observer's thread.
/// is_leader(), term(), resign() and stop() may be called from any thread.

#include <atomic>
#include <concepts>
#include <condition_variable>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>

#include "leader/elector.hpp"
#include "leader/lock_watching.hpp"

namespace leader {

class BlockingPool;

/// What a campaign calls; every member is optional.
struct CampaignCallbacks {
  /// This replica became leader. `ctx` carries the fencing token, the slot (group electors) and
  /// the stop_token that fires before the server can expire the lease. May block for the whole
  /// term (LeaderSelector style) or return at once (client-go style); see resign_on_return.
  std::function<void(LeaderContext& ctx)> on_started_leading{};
  /// The term ended, for any reason (stopped, resigned, lease lost, the callback returned or
  /// threw); called once after every on_started_leading, after the lease was released.
  std::function<void()> on_stopped_leading{};
  /// The holders of the lock changed as an observer of the store saw it (observe_lock: watched
  /// where the store can, else polled; see CampaignOptions::observe_interval). Runs on the
  /// observer's thread; must not block long.
  std::function<void(const LockState& now)> on_new_leader{};
  /// A retryable store failure (unavailable, deadline_exceeded, internal) while campaigning; the
  /// campaign retries after retry_period. Other codes end run() with the BackendError.
  std::function<void(const BackendError& error)> on_error{};
};

/// How a campaign behaves between and after terms.
struct CampaignOptions {
  /// Pause between attempts after contention or a retryable store failure (besides the elector's
  /// own wait_time, which paces attempts inside one acquire). > 0, <= 365 days.
  Duration retry_period = std::chrono::seconds(1);
  /// On stop(): release the lease so a standby takes over at once (true), or stop renewing and
  /// leave it to expire on the server after its ttl (false, as client-go's ReleaseOnCancel=false).
  bool release_on_cancel = true;
  /// When on_started_leading returns: keep leading until stopped, resigned or lost (false), or
  /// step down at once as after resign() (true: Curator LeaderSelector's takeLeadership).
  bool resign_on_return = false;
  /// After resign(): do not campaign again until another replica holds the lock or this long has
  /// passed, so that a standby gets it. 0 = the elector's lease_time.
  Duration resign_hold_off = Duration{0};
  /// on_new_leader follows the lock with observe_lock on the elector's store: a store that is a
  /// LockWatcher is watched (this is then the shortest wait between re-reads), any other is
  /// polled every observe_interval; after a failed read or watch, the pause before the next.
  Duration observe_interval = std::chrono::seconds(1);

  /// Throws InvalidArgument when a rule is broken.
  void validate() const;
};

/// Options of observe_lock.
struct ObserveOptions {
  /// Period of the inspect() poll of a store without a watch (LockWatcher): a change is seen at
  /// most this long (plus one call) after it. With a watch, the shortest wait between re-reads.
  Duration interval = std::chrono::seconds(1);
  /// Bound of one inspect() call.
  Duration call_timeout = std::chrono::seconds(5);
  /// With a store that watches: the safety net. The lock is re-read at least this often, and at
  /// the earliest holder's expiry (expires_in), so that an expiry that changes no record (or a
  /// missed notification) is still reported. > 0.
  Duration recheck = std::chrono::seconds(30);
};

/// Follows `lock` on `store` until `stop` or until `on_change` returns false, calling it with the
/// first snapshot and then with every snapshot whose holders differ from the previous one. A store
/// that is a LockWatcher is watched (a change is reported as soon as the store notifies it, with
/// a re-read at the holders' expiry and every `recheck` as the safety net); any other is polled
/// every `interval`. Throws InvalidArgument for a bad lock name or duration, BackendError when a
/// read or a watch fails.
void observe_lock(LeaseStore& store, std::string_view lock,
                  const std::function<bool(const LockState&)>& on_change,
                  const std::stop_token& stop, ObserveOptions options = {});

/// Continuous leadership of one lock over any elector (LeaderElector, LeaderGroupElector: N
/// active replicas, each with its slot in ctx.slot(); StrategicElector). Not copyable. The
/// elector must have auto_extend (the lease is renewed for the whole term).
class Campaign {
 public:
  /// Validates the options (InvalidArgument: no auto_extend, bad durations, bad lock name).
  template <class E>
  requires std::derived_from<E, Elector> Campaign(const E& elector, std::string_view lock,
                                                  CampaignCallbacks callbacks,
                                                  CampaignOptions options = {})
      : Campaign(Setup{[elector, name = std::string(lock)](const std::stop_token& stop) {
                         return elector.acquire(name, stop);
                       },
                       [elector, name = std::string(lock)] { return elector.inspect(name); },
                       elector.options(), elector.event_bus(), std::string(lock), elector.store(),
                       elector.lock_name(lock)},
                 std::move(callbacks), options) {}
  /// Stops and joins a started campaign (as stop()).
  ~Campaign();
  Campaign(const Campaign&) = delete;
  Campaign& operator=(const Campaign&) = delete;

  /// Campaigns on this thread until `stop` is requested (then returns normally). Rethrows what
  /// on_started_leading threw, and BackendErrors that are not retryable, after the term ended.
  void run(const std::stop_token& stop);
  /// Starts run() on a thread of the campaign's own. Throws std::logic_error when running.
  void start();
  /// Requests the campaign to end and waits for it (started with start()); rethrows the error
  /// that ended it, if any. Idempotent.
  void stop();
  /// run() on a pool thread (BlockingPool::shared() by default); the future is ready when it ends.
  std::future<void> run_async(std::stop_token stop, BlockingPool* pool = nullptr);
  /// Ends the current term (its stop_token fires, the lease is released) and campaigns again
  /// after the resign hold-off. False when not leading.
  bool resign();
  /// True while a term runs: elected, and its stop_token has not fired.
  [[nodiscard]] bool is_leader() const noexcept { return leading_.load(); }
  /// The lease of the current term, if leading.
  [[nodiscard]] std::optional<LeaseInfo> term() const;
  /// Terms started so far.
  [[nodiscard]] std::uint64_t terms() const noexcept { return terms_.load(); }
  /// The lock's holders as the store reports them now (one inspect call).
  [[nodiscard]] LockState observe() const { return inspect_(); }
  /// The elector's event bus (elected, renewed, lost, released events of every term).
  [[nodiscard]] EventBus& events() const { return *bus_; }

 private:
  struct Setup {
    std::function<Acquisition(const std::stop_token&)> acquire;
    std::function<LockState()> inspect;
    ElectionOptions election;
    std::shared_ptr<EventBus> bus;
    std::string lock;
    std::shared_ptr<LeaseStore> store;  // observed by on_new_leader
    std::string stored_lock;            // `lock` as stored (tenant prefix applied)
  };
  Campaign(Setup setup, CampaignCallbacks callbacks, CampaignOptions options);
  /// One term under `guard`; returns normally or rethrows the callback's exception.
  void lead(LeaseGuard& guard, const std::stop_token& campaign_stop);
  /// Sleeps up to `d`, or until `stop` or (with `other_holder`) another replica holds the lock.
  void pause(Duration d, const std::stop_token& stop, bool until_other_holder);
  void observe_loop(const std::stop_token& stop);

  std::function<Acquisition(const std::stop_token&)> acquire_;
  std::function<LockState()> inspect_;
  ElectionOptions election_;
  std::shared_ptr<EventBus> bus_;
  std::string lock_;
  std::shared_ptr<LeaseStore> store_;
  std::string stored_lock_;
  CampaignCallbacks callbacks_;
  CampaignOptions options_;

  std::atomic<bool> leading_{false};
  std::atomic<bool> running_{false};
  std::atomic<std::uint64_t> terms_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<LeaseInfo> term_;          // guarded by mu_
  std::stop_source* term_stop_ = nullptr;  // guarded by mu_: the current term's stop
  bool resigned_ = false;                  // guarded by mu_
  std::exception_ptr error_;               // guarded by mu_: what ended a started campaign
  std::jthread thread_;
};

}  // namespace leader
