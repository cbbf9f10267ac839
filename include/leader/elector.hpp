#pragma once
/// @file elector.hpp
/// LeaderElector: run an action only on the replica that holds the lease.
///
/// What is NOT guaranteed: that no two replicas ever run at the same time in every failure. A
/// replica that is paused longer than its safety margin, or whose clock *rate* drifts, can act on
/// a lease the store already gave away. What is guaranteed: the action's stop_token fires at the
/// local deadline (send time of the last confirmed acquire/renew + the ttl it was granted - safety
/// margin, lowered by any request whose outcome is unknown), before the server can expire the
/// lease, and every lease carries a fencing token that strictly increases per lock, so a
/// protected resource that checks it rejects stale writers.
///
/// Threads: run_if_leader blocks the calling thread while it waits for the lease (up to
/// wait_time) and while the action runs. One elector may be used from many threads at once.

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "leader/context.hpp"
#include "leader/errors.hpp"
#include "leader/events.hpp"
#include "leader/history.hpp"
#include "leader/options.hpp"
#include "leader/result.hpp"
#include "leader/store.hpp"

namespace leader {

/// Injected collaborators of an elector; every member is optional.
struct ElectorHooks {
  std::shared_ptr<Clock> clock{};                ///< default: Clock::system()
  std::shared_ptr<ElectionListener> listener{};  ///< synchronous listener (older form)
  /// Fed asynchronously with one record per acquisition (attach_history on the elector's bus).
  std::shared_ptr<HistorySink> history{};
  std::uint64_t seed = 0;  ///< backoff jitter seed; 0 = random
  /// The bus events are published to; default: one of the elector's own.
  std::shared_ptr<EventBus> events{};
};

/// Thrown by an action (or by `throw_if_stopped`) to say it stopped because it was cancelled or its
/// lease was lost. Never reported as ActionFailed when the caller cancelled.
class OperationCancelled : public Error {
 public:
  OperationCancelled() : Error("operation cancelled") {}
  using Error::Error;
};

namespace detail {
struct HeldLease;
class ElectionCore;
class WaitsInLine;    // leader/detail/store_wrapper.hpp
class AsyncAttempts;  // leader/detail/store_wrapper.hpp
class RenewalScheduler;
class CheckedStore;
}  // namespace detail

/// A held lease, released when destroyed (respecting min_lease_time). Move-only.
class [[nodiscard]] LeaseGuard {
 public:
  /// Holds `held` (its core ends it: HeldLease::core).
  explicit LeaseGuard(std::shared_ptr<detail::HeldLease> held);
  LeaseGuard(LeaseGuard&& other) noexcept;
  LeaseGuard& operator=(LeaseGuard&& other) noexcept;
  LeaseGuard(const LeaseGuard&) = delete;
  LeaseGuard& operator=(const LeaseGuard&) = delete;
  ~LeaseGuard();

  /// The context to hand to the work.
  [[nodiscard]] LeaderContext& context() { return ctx_; }
  /// The lease as reported in results.
  [[nodiscard]] const LeaseInfo& info() const { return ctx_.lease(); }
  /// The store the lease lives in.
  [[nodiscard]] const LeaseStore* store() const;
  /// Releases now (idempotent). `failed` only changes the history record and events.
  void release(bool failed = false, const std::string& error = {}) noexcept;
  /// Stops renewing and ends the lease here without releasing it on the store, where it stays
  /// held until its ttl runs out (a campaign's release_on_cancel = false). Idempotent.
  void abandon() noexcept;

 private:
  // The context's lease is the guard's: one reference to it, none to the core (the lease
  // keeps its core).
  LeaderContext ctx_;
  bool ended_ = false;  // release() or abandon() ran: the destructor has nothing to end
};

/// The outcome of `acquire`: a guard, or why there is none.
struct [[nodiscard]] Acquisition {
  std::optional<LeaseGuard> guard{};
  Skipped skipped{};  ///< meaningful only when `guard` is empty
  explicit operator bool() const { return guard.has_value(); }
};

namespace detail {

/// The generic election engine every elector shares (one per elector, shared by copies).
class ElectionCore : public std::enable_shared_from_this<ElectionCore> {
 public:
  /// When a store call was sent and when its reply came, on the elector's clock.
  struct Exchange {
    TimePoint sent;
    TimePoint replied;
  };
  ElectionCore(std::shared_ptr<LeaseStore> store, ElectionOptions options, int slots,
               ElectorHooks hooks);
  /// Waits for the lease up to wait_time; the guard holds it (watched and, with auto_extend,
  /// renewed by the renewal scheduler).
  /// `lock` is a validated name (ElectorBase::scoped).
  Acquisition acquire(const std::string& lock, const std::stop_token& caller);
  /// What acquire_async completes with: the acquisition, or what acquire() would have thrown.
  using AcquireDone = std::function<void(Acquisition, std::exception_ptr)>;
  /// True when acquire_async() holds no thread while it waits: the store attempts and waits on
  /// its own I/O thread (detail::AsyncAttempts: Redis, standalone or Sentinel), the elector runs
  /// on the real clock, and no strategic turns check runs before each acquire.
  [[nodiscard]] bool acquires_async() const noexcept;
  /// acquire() without blocking the caller (requires acquires_async()): each attempt and each
  /// pause between attempts run on the store's I/O thread; `done` runs exactly once there (never
  /// inside this call) and must not block. Same grants, skips, backend errors and events as
  /// acquire(); fair waiting is the store's: a change of the lock wakes its earliest waiter of
  /// this process first (not this process's blocking waiters' queue).
  void acquire_async(std::string lock, std::stop_token caller, AcquireDone done);
  /// Ends a held lease: stops watching, releases (keeping min_lease_time; with `on_store` false
  /// leaves it to expire on the store), emits events.
  void finish(HeldLease& held, bool failed, const std::string& error,
              bool on_store = true) noexcept;
  /// Reports a skip to the listener.
  void report_skip(const std::string& lock, const Skipped& skipped) noexcept;

  [[nodiscard]] const ElectionOptions& options() const { return options_; }
  [[nodiscard]] int slots() const { return slots_; }
  [[nodiscard]] const std::shared_ptr<LeaseStore>& store() const { return store_; }
  [[nodiscard]] const std::shared_ptr<Clock>& clock() const { return hooks_.clock; }
  [[nodiscard]] const std::shared_ptr<EventBus>& events() const { return hooks_.events; }
  /// True when acquire() and finish() can never block the calling thread: the store's calls
  /// never block (detail::calls_never_block) and wait_time is 0 (no backoff sleep). The async
  /// layers then run them inline instead of on a BlockingPool thread.
  [[nodiscard]] bool never_blocks() const noexcept { return never_blocks_; }
  [[nodiscard]] const Subscription& history_feed() const { return history_; }

  /// Hooks of strategic elections: `check` runs before each acquire (a Skipped it returns is the
  /// call's result), `record` learns how each held lease ended (true: the action completed).
  struct Turns {
    std::function<std::optional<Skipped>(const std::string& lock)> check;
    std::function<void(bool completed)> record;
  };
  /// Installs `turns`; call before the core is shared.
  void set_turns(Turns turns) { turns_ = std::move(turns); }

 private:
  friend class AsyncAcquisition;  // acquire_async's state (election_core.cpp)
  Acquisition on_backend_error(const std::string& lock, const BackendError& e);
  /// Starts holding a granted lease (watched, events emitted); throws failed_precondition (after
  /// releasing it) when the grant is too short for an explicit safety margin. `unknown_before`:
  /// an earlier attempt of this call had an unknown outcome.
  std::shared_ptr<HeldLease> hold(const std::string& lock, const Lease& granted, Exchange acquire,
                                  const std::stop_token& caller, bool unknown_before);
  /// Releases, best effort, a lease an attempt with an unknown outcome may have left.
  void release_ghost(const LeaseRequest& request) noexcept;
  Duration jittered(Duration backoff);
  /// The options, shared with the held leases (they keep this core alive).
  std::shared_ptr<const ElectionOptions> shared_options() {
    return {shared_from_this(), &options_};
  }
  /// The renewal scheduler of the elector's clock, looked up once.
  RenewalScheduler& scheduler();
  /// The deadline of one store call sent at `sent` (read on the elector's clock).
  [[nodiscard]] Deadline call_deadline(TimePoint sent) const;
  std::shared_ptr<LeaseStore> store_;
  ElectionOptions options_;
  int slots_;
  ElectorHooks hooks_;
  bool real_clock_ = false;  // hooks_.clock is Clock::system(): its readings are Deadline's time
  Duration call_timeout_{};  // options_.effective_call_timeout()
  /// store_ itself when it is the CheckedStore (leader::open, make_memory_store): the requests
  /// this core builds and the leases it holds skip its second validation.
  CheckedStore* checked_ = nullptr;
  bool never_blocks_ = false;
  WaitsInLine* line_ = nullptr;     // the store's line for fair waiters, when it keeps one
  AsyncAttempts* async_ = nullptr;  // the store's asynchronous attempts, when it has them
  std::atomic<RenewalScheduler*> scheduler_{nullptr};
  std::mutex rng_mu_;
  std::mt19937_64 rng_;
  Subscription history_;  // feeds hooks_.history
  Turns turns_;
};

/// Registers, for the lifetime of this object, that the calling thread runs an action under the
/// lease of `lock` on `store` (consulted by reentrant run_if_leader calls).
class ThreadHold {
 public:
  ThreadHold(const LeaseStore* store, LeaderContext& ctx);
  ~ThreadHold();
  ThreadHold(const ThreadHold&) = delete;
  ThreadHold& operator=(const ThreadHold&) = delete;
};

/// The context of the innermost action this thread runs under the lease of `lock` on `store`,
/// or null.
LeaderContext* held_on_this_thread(const LeaseStore* store, std::string_view lock) noexcept;

/// Calls `f(ctx)` or `f()`, whichever `f` accepts.
template <class F>
decltype(auto) invoke_action(F& f, LeaderContext& ctx) {
  if constexpr (std::is_invocable_v<F&, LeaderContext&>) {
    return std::invoke(f, ctx);
  } else {
    static_assert(std::is_invocable_v<F&>,
                  "the action must be callable as f(LeaderContext&) or f()");
    return std::invoke(f);
  }
}

template <class F>
using action_result_t = std::remove_cvref_t<decltype(invoke_action(
    std::declval<std::remove_reference_t<F>&>(), std::declval<LeaderContext&>()))>;

/// True when the exception means "stopped because cancelled".
bool is_cancellation(const std::exception_ptr& e) noexcept;

/// The run_if_leader family, shared by every elector that owns an ElectionCore.
class ElectorBase {
 public:
  /// Acquires the lease of `lock` (waiting up to wait_time) without running anything.
  Acquisition acquire(std::string_view lock, const std::stop_token& stop = {}) const {
    return core_->acquire(scoped(lock), stop);
  }

  /// Runs `action` if this replica gets the lease. Returns the value (std::optional<T>), or
  /// `bool` for void actions; empty/false when skipped. The action's exceptions propagate
  /// unchanged after the lease is released.
  template <class F>
  auto run_if_leader(std::string_view lock, F&& action, const std::stop_token& stop = {}) const {
    using T = action_result_t<F>;
    if (LeaderContext* outer = reentered(lock)) {  // runs under the lease this thread holds
      if constexpr (std::is_void_v<T>) {
        invoke_action(action, *outer);
        return true;
      } else {
        return std::optional<T>{invoke_action(action, *outer)};
      }
    }
    Acquisition acq = acquire(lock, stop);
    if constexpr (std::is_void_v<T>) {
      if (!acq) return false;
      run_guarded(*acq.guard, action);
      return true;
    } else {
      if (!acq) return std::optional<T>{};
      return std::optional<T>{run_guarded(*acq.guard, action)};
    }
  }

  /// Like run_if_leader, but returns Elected / Skipped / ActionFailed and never throws the
  /// action's exception. Backend errors still throw unless on_backend_error says otherwise.
  template <class F>
  auto run_if_leader_result(std::string_view lock, F&& action,
                            const std::stop_token& stop = {}) const
      -> RunResult<action_result_t<F>> {
    using T = action_result_t<F>;
    LeaderContext* outer = reentered(lock);
    std::optional<Acquisition> acq;
    if (!outer) {
      acq.emplace(acquire(lock, stop));
      if (!*acq) return acq->skipped;
    }
    LeaseInfo info = outer ? outer->lease() : acq->guard->info();
    try {
      if (outer) {  // runs under the lease this thread holds
        if constexpr (std::is_void_v<T>) {
          invoke_action(action, *outer);
          return Elected<void>{info};
        } else {
          T value = invoke_action(action, *outer);
          return Elected<T>{std::move(value), info};
        }
      }
      LeaseGuard& guard = *acq->guard;
      if constexpr (std::is_void_v<T>) {
        run_guarded(guard, action);
        return Elected<void>{info};
      } else {
        T value = run_guarded(guard, action);
        return Elected<T>{std::move(value), info};
      }
    } catch (...) {
      auto error = std::current_exception();
      if (stop.stop_requested())  // the caller cancelled: whatever the action threw
        return Skipped{SkipReason::cancelled, "cancelled while the action ran"};
      return ActionFailed{error, info};
    }
  }

  /// A best-effort snapshot of the lock (holders, expiry, tokens); never disturbs the holder.
  [[nodiscard]] LockState inspect(std::string_view lock) const;
  /// The validated options.
  [[nodiscard]] const ElectionOptions& options() const { return core_->options(); }
  /// The store.
  [[nodiscard]] const std::shared_ptr<LeaseStore>& store() const { return core_->store(); }
  /// True when acquire() and the release of its guard never block the calling thread (an
  /// in-process store and wait_time 0): the async layers then call them inline.
  [[nodiscard]] bool acquire_never_blocks() const noexcept { return core_->never_blocks(); }
  /// acquire() without blocking the calling thread, for the async layers: `done` runs once, on
  /// the store's I/O thread, with the acquisition or what acquire() would have thrown. Only when
  /// acquires_async(); see detail::ElectionCore::acquire_async.
  void acquire_async(std::string_view lock, std::stop_token stop,
                     detail::ElectionCore::AcquireDone done) const {
    core_->acquire_async(scoped(lock), std::move(stop), std::move(done));
  }
  /// True when acquire_async() waits for a lease without holding any thread (a store with
  /// asynchronous I/O of its own: Redis, standalone or Sentinel; the real clock).
  [[nodiscard]] bool acquires_async() const noexcept { return core_->acquires_async(); }
  /// `lock` as the store knows it: validated, with the tenant prefix when scoped (for
  /// store-level calls such as observe_lock).
  [[nodiscard]] std::string lock_name(std::string_view lock) const { return scoped(lock); }
  /// The bus this elector publishes its events to (subscribe, watch_state, state).
  [[nodiscard]] EventBus& events() const { return *core_->events(); }
  /// The bus, shared (e.g. to hand to another elector through ElectorHooks::events).
  [[nodiscard]] std::shared_ptr<EventBus> event_bus() const { return core_->events(); }
  /// The feed of ElectorHooks::history (its dropped() and failures() count lost records);
  /// inactive when no sink was given.
  [[nodiscard]] const Subscription& history_feed() const { return core_->history_feed(); }
  /// This process's leadership of `lock` (tenant scope applied), as events().state() reports it.
  [[nodiscard]] LeadershipState leadership(std::string_view lock) const {
    return events().state(scoped(lock));
  }

 protected:
  ElectorBase(std::shared_ptr<ElectionCore> core, std::string tenant)
      : core_(std::move(core)), tenant_(std::move(tenant)) {}
  /// The full lock name: validated, with the tenant prefix when scoped.
  [[nodiscard]] std::string scoped(std::string_view lock) const;
  /// With options().reentrant: the context of the lease of `lock` this thread runs under.
  [[nodiscard]] LeaderContext* reentered(std::string_view lock) const {
    if (!core_->options().reentrant) return nullptr;
    return held_on_this_thread(core_->store().get(), scoped(lock));
  }

  std::shared_ptr<ElectionCore> core_;
  std::string tenant_;

 private:
  template <class F>
  static decltype(auto) run_guarded(LeaseGuard& guard, F& action) {
    try {
      ThreadHold on_this_thread(guard.store(), guard.context());
      if constexpr (std::is_void_v<action_result_t<F>>) {
        invoke_action(action, guard.context());
        guard.release();
      } else {
        auto value = invoke_action(action, guard.context());
        guard.release();
        return value;
      }
    } catch (const std::exception& e) {
      guard.release(true, e.what());
      throw;
    } catch (...) {
      guard.release(true, "unknown exception");
      throw;
    }
  }
};

}  // namespace detail

/// Single-leader election: at most one holder of each lock.
class LeaderElector : public detail::ElectorBase {
 public:
  /// Validates `options` (InvalidArgument on a broken rule).
  explicit LeaderElector(std::shared_ptr<LeaseStore> store, ElectionOptions options = {},
                         ElectorHooks hooks = {});
  /// An elector whose lock names live in the scope of `tenant` (`job` -> `tenant:<id>:job`).
  [[nodiscard]] LeaderElector for_tenant(std::string_view tenant) const;

 private:
  LeaderElector(std::shared_ptr<detail::ElectionCore> core, std::string tenant)
      : ElectorBase(std::move(core), std::move(tenant)) {}
};

}  // namespace leader
