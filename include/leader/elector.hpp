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
  /// Releases now (idempotent). `failed` only changes the history record and events. Returns
  /// the store's failure (a BackendError) when the release call failed: the lease then stays
  /// held on the store until its ttl runs out. Null when released, already ended, or fail-open.
  std::exception_ptr release(bool failed = false, const std::string& error = {}) noexcept;
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

}  // namespace detail

/// What every elector offers (LeaderElector, LeaderGroupElector, StrategicElector): the
/// run_if_leader family over the one election engine, which is private to the library.
class Elector {
 public:
  /// Acquires the lease of `lock` (waiting up to wait_time) without running anything.
  Acquisition acquire(std::string_view lock, const std::stop_token& stop = {}) const;

  /// Runs `action` if this replica gets the lease. Returns the value (std::optional<T>), or
  /// `bool` for void actions; empty/false when skipped. The action's exceptions propagate
  /// unchanged after the lease is released.
  template <class F>
  auto run_if_leader(std::string_view lock, F&& action, const std::stop_token& stop = {}) const {
    using T = detail::action_result_t<F>;
    if (LeaderContext* outer = reentered(lock)) {  // runs under the lease this thread holds
      if constexpr (std::is_void_v<T>) {
        detail::invoke_action(action, *outer);
        return true;
      } else {
        return std::optional<T>{detail::invoke_action(action, *outer)};
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
      -> RunResult<detail::action_result_t<F>> {
    using T = detail::action_result_t<F>;
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
          detail::invoke_action(action, *outer);
          return Elected<void>{info};
        } else {
          T value = detail::invoke_action(action, *outer);
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
  [[nodiscard]] const ElectionOptions& options() const;
  /// The store.
  [[nodiscard]] const std::shared_ptr<LeaseStore>& store() const;
  /// True when acquire() and the release of its guard never block the calling thread (an
  /// in-process store and wait_time 0): the async layers then call them inline.
  [[nodiscard]] bool acquire_never_blocks() const noexcept;
  /// What acquire_async completes with: the acquisition, or what acquire() would have thrown.
  using AcquireDone = std::function<void(Acquisition, std::exception_ptr)>;
  /// acquire() without blocking the calling thread, for the async layers: `done` runs once, on
  /// the store's I/O thread (never inside this call; it must not block), with the acquisition
  /// or what acquire() would have thrown: the same grants, skips, backend errors and events.
  /// Only when acquires_async().
  void acquire_async(std::string_view lock, std::stop_token stop, AcquireDone done) const;
  /// True when acquire_async() waits for a lease without holding any thread (a store with
  /// asynchronous I/O of its own: Redis, standalone or Sentinel; the real clock).
  [[nodiscard]] bool acquires_async() const noexcept;
  /// `lock` as the store knows it: validated, with the tenant prefix when scoped (for
  /// store-level calls such as observe_lock).
  [[nodiscard]] std::string lock_name(std::string_view lock) const { return scoped(lock); }
  /// The bus this elector publishes its events to (subscribe, watch_state, state).
  [[nodiscard]] EventBus& events() const;
  /// The bus, shared (e.g. to hand to another elector through ElectorHooks::events).
  [[nodiscard]] std::shared_ptr<EventBus> event_bus() const;
  /// The feed of ElectorHooks::history (its dropped() and failures() count lost records);
  /// inactive when no sink was given.
  [[nodiscard]] const Subscription& history_feed() const;
  /// This process's leadership of `lock` (tenant scope applied), as events().state() reports it.
  [[nodiscard]] LeadershipState leadership(std::string_view lock) const {
    return events().state(scoped(lock));
  }

 protected:
  Elector(std::shared_ptr<detail::ElectionCore> core, std::string tenant);
  /// The full lock name: validated, with the tenant prefix when scoped.
  [[nodiscard]] std::string scoped(std::string_view lock) const;
  /// With options().reentrant: the context of the lease of `lock` this thread runs under.
  [[nodiscard]] LeaderContext* reentered(std::string_view lock) const;

  std::shared_ptr<detail::ElectionCore> core_;
  std::string tenant_;

 private:
  template <class F>
  static decltype(auto) run_guarded(LeaseGuard& guard, F& action) {
    try {
      detail::ThreadHold on_this_thread(guard.store(), guard.context());
      if constexpr (std::is_void_v<detail::action_result_t<F>>) {
        detail::invoke_action(action, guard.context());
        guard.release();
      } else {
        auto value = detail::invoke_action(action, guard.context());
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

namespace detail {
/// The former name of Elector.
using ElectorBase = Elector;
}  // namespace detail

/// Single-leader election: at most one holder of each lock.
class LeaderElector : public Elector {
 public:
  /// Validates `options` (InvalidArgument on a broken rule).
  explicit LeaderElector(std::shared_ptr<LeaseStore> store, ElectionOptions options = {},
                         ElectorHooks hooks = {});
  /// An elector whose lock names live in the scope of `tenant` (`job` -> `tenant:<id>:job`).
  [[nodiscard]] LeaderElector for_tenant(std::string_view tenant) const;

 private:
  LeaderElector(std::shared_ptr<detail::ElectionCore> core, std::string tenant)
      : Elector(std::move(core), std::move(tenant)) {}
};

}  // namespace leader
