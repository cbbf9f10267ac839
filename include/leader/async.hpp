#pragma once
/// @file async.hpp
/// Futures and executor dispatch over any elector (LeaderElector, LeaderGroupElector, ...).
///
/// What is NOT guaranteed: that a call starts waiting for its lease the moment it is made. The
/// blocking acquire runs on a BlockingPool thread; when every pool thread is busy the call queues,
/// and its wait_time starts when a thread picks it up.
///
/// Threads: the lease is acquired and released on BlockingPool threads (releases on
/// BlockingPool::releases(), so a full pool of waiters never holds up the release they wait
/// for; renewed by the core's renewal scheduler), never on the caller's thread or the caller's
/// executor. Except where that cannot block: `run_if_leader_on` over an elector whose
/// acquire_never_blocks() (an in-process store whose capabilities() say never_blocks, e.g. the
/// memory store, and wait_time 0) acquires on the calling thread and releases on the executor's
/// thread right after the action. And an elector that acquires_async() (a store with asynchronous
/// I/O of its own: Redis) waits for its lease without any thread: the attempts and the pauses
/// between them run on the store's I/O thread, and a pool thread is taken only once the wait is
/// over (to run the action or finish). `run_if_leader_async` runs the action on the pool thread
/// that acquired the lease (like std::async); `run_if_leader_on` runs it on the given executor.
/// Completion is a std::future, made ready on a pool thread.
///
/// Cancellation: the std::stop_token given by the caller. Requested while waiting for the lease:
/// nothing is acquired, the call reports "not run" (Skipped{cancelled}). Requested while the
/// action runs: the action's LeaderContext::stop_token() fires; whatever the action then throws
/// is reported as Skipped{cancelled} by the _result variants, never ActionFailed (the plain
/// variants rethrow it, as run_if_leader does). See docs/async.md.

#include <atomic>
#include <concepts>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "leader/blocking_pool.hpp"
#include "leader/elector.hpp"

namespace leader {

/// An elector the async layers can drive: copyable, with the blocking `acquire` primitive.
template <class E>
concept AsyncElectable = std::copy_constructible<E> &&
    requires(const E& e, std::string_view lock, std::stop_token stop) {
  { e.acquire(lock, stop) } -> std::same_as<Acquisition>;
};

namespace detail {

/// `std::future<U>` / `std::shared_future<U>` -> U; anything else unchanged.
template <class T>
struct Unwrapped {
  using type = T;
  static constexpr bool kIsFuture = false;
};
template <class U>
struct Unwrapped<std::future<U>> {
  using type = U;
  static constexpr bool kIsFuture = true;
};
template <class U>
struct Unwrapped<std::shared_future<U>> {
  using type = U;
  static constexpr bool kIsFuture = true;
};

/// What run_if_leader returns for value type V: bool for void, std::optional<V> otherwise.
template <class V>
using plain_result_t = std::conditional_t<std::is_void_v<V>, bool, std::optional<V>>;

/// The stored value of an action returning V (std::monostate for void).
template <class V>
using stored_t = std::conditional_t<std::is_void_v<V>, std::monostate, V>;

/// The `what()` of an exception, for history records.
inline std::string describe(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}

/// Everything a run produced, turned into the caller's result at the end.
template <class V>
struct Outcome {
  std::exception_ptr acquire_error;  ///< the store failed while acquiring: always rethrown
  std::optional<Skipped> skipped;    ///< the action did not run
  std::optional<LeaseInfo> lease;    ///< set once acquired
  std::optional<stored_t<V>> value;  ///< the action returned
  std::exception_ptr action_error;   ///< the action threw
  bool caller_cancelled = false;     ///< the caller asked to stop before the run finished

  /// run_if_leader semantics: the value, false/empty when skipped; exceptions rethrown.
  plain_result_t<V> plain() {
    if (acquire_error) std::rethrow_exception(acquire_error);
    if (action_error) std::rethrow_exception(action_error);
    if constexpr (std::is_void_v<V>) {
      return value.has_value();
    } else {
      return value ? std::optional<V>(std::move(*value)) : std::optional<V>();
    }
  }

  /// run_if_leader_result semantics; a cancelled action is Skipped{cancelled}, never failed.
  RunResult<V> result() {
    if (acquire_error) std::rethrow_exception(acquire_error);
    if (skipped) return *skipped;
    if (action_error) {
      if (caller_cancelled)  // as run_if_leader_result: whatever the action threw
        return Skipped{SkipReason::cancelled, "cancelled while the action ran"};
      return ActionFailed{action_error, *lease};
    }
    if constexpr (std::is_void_v<V>) {
      return Elected<void>{*lease};
    } else {
      return Elected<V>{std::move(*value), *lease};
    }
  }
};

/// True (and `outcome` says why) when an action handed to an executor must not start now: the
/// caller cancelled, or the lease was lost while the action waited for the executor.
template <class V>
bool start_refused(const std::stop_token& caller, LeaseGuard& guard, Outcome<V>& outcome) {
  if (caller.stop_requested()) {
    outcome.skipped = Skipped{SkipReason::cancelled, "cancelled before the action started"};
    return true;
  }
  if (!guard.context().still_leader()) {
    outcome.skipped = Skipped{SkipReason::lease_lost,
                              "the lease was lost before the action started (its executor ran it "
                              "after the lease's local deadline)"};
    return true;
  }
  return false;
}

/// Releases `guard` as run_if_leader does: failed when the action threw.
template <class V>
void release_guard(std::optional<LeaseGuard>& guard, const Outcome<V>& outcome) noexcept {
  if (!guard) return;
  if (outcome.action_error) {
    guard->release(true, describe(outcome.action_error));
  } else {
    guard->release();
  }
  guard.reset();
}

/// Runs the blocking `elector.acquire(lock, stop)` and passes its outcome to
/// `then(Acquisition, std::exception_ptr)`, outside the exception handler (the exception may be
/// dropped last by another thread, which a race detector cannot order against the handler).
template <class Elector, class Then>
void acquire_then(const Elector& elector, const std::string& lock, const std::stop_token& stop,
                  Then&& then) {
  std::optional<Acquisition> acq;
  std::exception_ptr error;
  try {
    acq.emplace(elector.acquire(lock, stop));
  } catch (...) {
    error = std::current_exception();
  }
  if (error) return then(Acquisition{}, std::move(error));
  then(std::move(*acq), nullptr);
}

/// Runs `f` on `ex`: `ex.execute(f)`, else `post(ex, f)` found by argument-dependent lookup
/// (asio executors: ::asio::post), else `ex(f)`.
template <class Executor, class Fn>
void execute_on(const Executor& ex, Fn&& f) {
  if constexpr (requires { ex.execute(std::forward<Fn>(f)); }) {
    ex.execute(std::forward<Fn>(f));
  } else if constexpr (requires { post(ex, std::forward<Fn>(f)); }) {
    post(ex, std::forward<Fn>(f));
  } else {
    static_assert(std::is_invocable_v<const Executor&, Fn>,
                  "the executor must provide ex.execute(f), post(ex, f) or be callable as ex(f)");
    ex(std::forward<Fn>(f));
  }
}

/// Runs each posted function inline (the pool thread that acquired the lease runs the action).
struct InlineExecutor {
  template <class Fn>
  void operator()(Fn&& f) const {
    std::forward<Fn>(f)();
  }
};

/// One run whose action is dispatched to an executor while lease I/O stays on a BlockingPool.
/// Steps: acquire (pool) -> action (executor) -> [wait for a returned future (pool)] ->
/// release (pool) -> promise. An action the executor starts after the lease was lost (its local
/// deadline passed while the executor was busy) is not started: Skipped{lease_lost}. The
/// caller's executor, elector and action are dropped before the future becomes ready.
template <bool kResult, class Elector, class F, class Executor>
class DispatchedRun
    : public std::enable_shared_from_this<DispatchedRun<kResult, Elector, F, Executor>> {
  using T = action_result_t<F>;
  using V = typename Unwrapped<T>::type;

 public:
  using Out = std::conditional_t<kResult, RunResult<V>, plain_result_t<V>>;

  DispatchedRun(Executor ex, Elector elector, std::string_view lock, F action, std::stop_token stop,
                BlockingPool& pool)
      : ex_(std::move(ex)),
        elector_(std::move(elector)),
        lock_(lock),
        action_(std::move(action)),
        stop_(std::move(stop)),
        pool_(pool),
        inline_(inline_calls(*elector_)) {}

  /// Starts the run; the future is ready when the lease has been released.
  std::future<Out> start() {
    auto future = promise_.get_future();
    if (inline_) {  // cannot block: acquire here, no hand-off to the pool
      acquire();
    } else if (!start_async()) {
      pool_.post([self = this->shared_from_this()] { self->acquire(); });
    }
    return future;
  }

 private:
  /// Starts acquire_async when the elector waits for its lease without a thread
  /// (Elector::acquires_async: the store's I/O thread attempts and pauses); its outcome
  /// continues on the pool, as a blocking acquire's would. False when it cannot.
  bool start_async() {
    if constexpr (requires { elector_->acquires_async(); }) {
      if (!elector_->acquires_async()) return false;
      std::exception_ptr error;
      // A copy: the outcome may finish the run (which drops elector_) before this call returns.
      const Elector elector = *elector_;
      try {
        elector.acquire_async(
            lock_, stop_,
            [self = this->shared_from_this()](Acquisition acq, const std::exception_ptr& e) {
              self->async_outcome_.emplace(std::move(acq));
              self->async_error_ = e;
              self->pool_.post(
                  [self] { self->acquired(std::move(*self->async_outcome_), self->async_error_); });
            });
      } catch (...) {  // an invalid lock name: the future holds it
        error = std::current_exception();
      }
      // Only a local: once acquire_async returned, the store's thread owns this run's members.
      if (error) acquired({}, error);
      return true;
    } else {
      return false;
    }
  }

  void acquire() {
    acquire_then(*elector_, lock_, stop_, [this](Acquisition acq, std::exception_ptr error) {
      acquired(std::move(acq), error);
    });
  }

  /// The acquire's outcome, on a pool thread (or the initiating thread when nothing blocks).
  void acquired(Acquisition acq, const std::exception_ptr& error) {
    if (error) {
      outcome_.acquire_error = error;
      return finish();
    }
    if (!acq) {
      outcome_.skipped = std::move(acq.skipped);
      return finish();
    }
    guard_.emplace(std::move(*acq.guard));
    outcome_.lease = guard_->info();
    if (stop_.stop_requested()) {  // cancelled just as the lease came: do not start the action
      outcome_.skipped = Skipped{SkipReason::cancelled, "cancelled before the action started"};
      return release();
    }
    // The future must not become ready while this thread is still inside the executor's post
    // (its caller may then destroy the executor's context): the last of the two delivers.
    holds_.store(2);
    execute_on(*ex_, [self = this->shared_from_this()] { self->run_action(); });
    if (holds_.fetch_sub(1) == 1) deliver();
  }

  void run_action() {
    if (start_refused(stop_, *guard_, outcome_))
      return on_pool([self = this->shared_from_this()] { self->release(); }, true);
    try {
      ThreadHold on_this_thread(guard_->store(), guard_->context());  // for reentrant calls
      if constexpr (Unwrapped<T>::kIsFuture) {
        pending_.emplace(invoke_action(*action_, guard_->context()));
        return on_pool([self = this->shared_from_this()] { self->await_future(); });
      } else if constexpr (std::is_void_v<T>) {
        invoke_action(*action_, guard_->context());
        outcome_.value.emplace();
      } else {
        outcome_.value.emplace(invoke_action(*action_, guard_->context()));
      }
    } catch (...) {
      outcome_.action_error = std::current_exception();
    }
    on_pool([self = this->shared_from_this()] { self->release(); }, true);
  }

  /// Continues on the pool (at once when the action already runs on a pool thread, or when the
  /// release cannot block). A release goes to BlockingPool::releases(), never behind the waits
  /// queued on the caller's pool.
  template <class Fn>
  void on_pool(Fn&& fn, bool is_release = false) {
    if constexpr (std::is_same_v<Executor, InlineExecutor>) {
      fn();
    } else {
      if (inline_ && !Unwrapped<T>::kIsFuture) return fn();  // release only: it cannot block
      (is_release ? BlockingPool::releases() : pool_).post(std::forward<Fn>(fn));
    }
  }

  /// With an executor of the caller's (not InlineExecutor, where the acquiring thread runs the
  /// action and must stay off the caller's thread): true when the elector's acquire and release
  /// never block (Elector::acquire_never_blocks), so they skip the pool.
  static bool inline_calls(const Elector& e) {
    if constexpr (!std::is_same_v<Executor, InlineExecutor> &&
                  requires { e.acquire_never_blocks(); }) {
      return e.acquire_never_blocks();
    } else {
      return false;
    }
  }

  void await_future() {
    try {
      if constexpr (std::is_void_v<V>) {
        pending_->get();
        outcome_.value.emplace();
      } else {
        outcome_.value.emplace(pending_->get());
      }
    } catch (...) {
      outcome_.action_error = std::current_exception();
    }
    pending_.reset();
    release();
  }

  void release() {
    release_guard(guard_, outcome_);
    finish();
  }

  void finish() {
    outcome_.caller_cancelled = stop_.stop_requested();
    try {
      if constexpr (kResult) {
        out_.emplace(outcome_.result());
      } else {
        out_.emplace(outcome_.plain());
      }
    } catch (...) {
      out_error_ = std::current_exception();
    }
    if (holds_.fetch_sub(1) == 1) deliver();
  }

  /// Makes the future ready, after dropping the caller's executor, elector and action here (the
  /// caller may destroy what they refer to once the future is ready).
  void deliver() {
    action_.reset();
    elector_.reset();
    ex_.reset();
    if (out_error_) {
      promise_.set_exception(out_error_);
    } else {
      promise_.set_value(std::move(*out_));
    }
  }

  std::optional<Executor> ex_;      // dropped before the future is ready
  std::optional<Elector> elector_;  // dropped before the future is ready
  std::string lock_;
  std::optional<F> action_;  // dropped before the future is ready
  std::stop_token stop_;
  BlockingPool& pool_;
  const bool inline_;  // acquire and release cannot block: no BlockingPool hand-off
  std::promise<Out> promise_;
  std::optional<Acquisition> async_outcome_;  // acquire_async's, until the pool continues
  std::exception_ptr async_error_;
  std::optional<LeaseGuard> guard_;
  // The future an action returned, when it returns one.
  std::conditional_t<Unwrapped<T>::kIsFuture, std::optional<T>, std::monostate> pending_;
  Outcome<V> outcome_;
  std::optional<Out> out_;
  std::exception_ptr out_error_;
  std::atomic<int> holds_{1};  // finish(), plus the dispatching call while it runs
};

template <bool kResult, class Executor, class Elector, class F>
auto start_dispatched(Executor ex, const Elector& elector, std::string_view lock, F&& action,
                      std::stop_token stop, BlockingPool& pool) {
  using Run = DispatchedRun<kResult, Elector, std::decay_t<F>, Executor>;
  auto run = std::make_shared<Run>(std::move(ex), elector, lock, std::forward<F>(action),
                                   std::move(stop), pool);
  return run->start();
}

}  // namespace detail

/// Runs `action` if this replica gets the lease, without blocking the caller. The future holds
/// what run_if_leader returns: `bool` for void actions, `std::optional<T>` otherwise; an action
/// returning `std::future<T>` keeps the lease until that future is ready and yields its value.
/// The action's exceptions and backend errors are stored in the future.
template <AsyncElectable Elector, class F>
auto run_if_leader_async(const Elector& elector, std::string_view lock, F&& action,
                         std::stop_token stop = {}, BlockingPool& pool = BlockingPool::shared()) {
  return detail::start_dispatched<false>(detail::InlineExecutor{}, elector, lock,
                                         std::forward<F>(action), std::move(stop), pool);
}

/// Like run_if_leader_async, with run_if_leader_result semantics: a future RunResult<T>
/// (Elected / Skipped / ActionFailed); only backend errors are stored as exceptions.
template <AsyncElectable Elector, class F>
auto run_if_leader_result_async(const Elector& elector, std::string_view lock, F&& action,
                                std::stop_token stop = {},
                                BlockingPool& pool = BlockingPool::shared()) {
  return detail::start_dispatched<true>(detail::InlineExecutor{}, elector, lock,
                                        std::forward<F>(action), std::move(stop), pool);
}

/// The executor-dispatch model: waits for the lease on `pool`, then runs `action` on `executor`
/// (anything with `execute(f)`, an asio executor (`post(executor, f)` found by ADL), or a
/// callable `executor(f)`), so
/// waiting never occupies the executor's threads. Results as run_if_leader_async.
template <class Executor, AsyncElectable Elector, class F>
auto run_if_leader_on(const Executor& executor, const Elector& elector, std::string_view lock,
                      F&& action, std::stop_token stop = {},
                      BlockingPool& pool = BlockingPool::shared()) {
  return detail::start_dispatched<false>(executor, elector, lock, std::forward<F>(action),
                                         std::move(stop), pool);
}

/// run_if_leader_on with run_if_leader_result semantics.
template <class Executor, AsyncElectable Elector, class F>
auto run_if_leader_result_on(const Executor& executor, const Elector& elector,
                             std::string_view lock, F&& action, std::stop_token stop = {},
                             BlockingPool& pool = BlockingPool::shared()) {
  return detail::start_dispatched<true>(executor, elector, lock, std::forward<F>(action),
                                        std::move(stop), pool);
}

}  // namespace leader
