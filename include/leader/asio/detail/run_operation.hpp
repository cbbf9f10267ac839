#pragma once
/// @file run_operation.hpp
/// The asynchronous operation behind leader::asio::async_run_if_leader (internal).
///
/// Steps and their threads: acquire (BlockingPool) -> action (the action executor; a coroutine
/// action runs on a strand of it) -> release (BlockingPool::releases()) -> completion handler
/// (posted to the handler's associated executor, the action executor when it has none).
///
/// Waiting without a thread: when the elector acquires_async() (a store with asynchronous I/O
/// of its own: Redis), the acquire is Elector::acquire_async: its attempts and the pauses
/// between them run on the store's I/O thread, so an operation waiting for a lease holds no
/// pool thread; the action and the completion are then dispatched as above.
///
/// Inline fast path: when the elector's acquire and release can never block (an in-process store
/// that reports never_blocks in its capabilities(), and wait_time 0: acquire_never_blocks()), there
/// is no BlockingPool hand-off: the acquire runs inside the initiating call, the action is
/// dispatched to its executor (inline when the initiating thread already runs it), the release runs
/// where the action ended, and only the completion handler is posted (never invoked inline).
///
/// Lifetime: the operation holds the caller's executors (tracked), elector, action and handler
/// only until it completes. Before the handler is posted, everything of the caller's is
/// dropped on the completing thread (a library thread, often), and the handler's executor travels
/// with the handler, so a caller that destroys its execution context once the handler ran never
/// has a library thread touch it afterwards.
///
/// An action the executor starts after the lease's local deadline passed (an executor busy longer
/// than the lease) is not started: the operation completes Skipped{lease_lost} (false / empty).

#include <asio.hpp>
#include <atomic>
#include <exception>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "leader/async.hpp"

namespace leader::asio {

/// True for `::asio::awaitable<T, Executor>`.
template <class T>
inline constexpr bool kIsAwaitable = false;
template <class T, class Executor>
inline constexpr bool kIsAwaitable<::asio::awaitable<T, Executor>> = true;

namespace detail {

/// The value an action yields: T, or U for an action returning `::asio::awaitable<U>`.
template <class T>
struct ActionValue {
  using type = T;
};
template <class U, class Executor>
struct ActionValue<::asio::awaitable<U, Executor>> {
  static_assert(std::is_same_v<Executor, ::asio::any_io_executor>,
                "coroutine actions must return ::asio::awaitable<T> (default executor)");
  using type = U;
};

template <class F>
using action_value_t = typename ActionValue<leader::detail::action_result_t<F>>::type;

/// What the operation completes with: run_if_leader (kResult false) or run_if_leader_result.
template <bool kResult, class F>
using completion_value_t = std::conditional_t<kResult, RunResult<action_value_t<F>>,
                                              leader::detail::plain_result_t<action_value_t<F>>>;

/// The completion signature of the operation.
template <bool kResult, class F>
using signature_t = void(std::exception_ptr, completion_value_t<kResult, F>);

/// A placeholder value passed with an exception.
template <class Out>
Out placeholder() {
  if constexpr (std::is_constructible_v<Out, Skipped>) {
    return Out(Skipped{});
  } else {
    return Out{};
  }
}

/// True when `e`'s acquire and release never block the calling thread (see the file comment).
template <class Elector>
bool acquires_inline(const Elector& e) {
  if constexpr (requires { e.acquire_never_blocks(); }) {
    return e.acquire_never_blocks();
  } else {
    return false;
  }
}

/// True when `e` waits for its lease without holding a thread (Elector::acquires_async: a
/// store with asynchronous I/O of its own, Redis).
template <class Elector>
bool acquires_async(const Elector& e) {
  if constexpr (requires { e.acquires_async(); }) {
    return e.acquires_async();
  } else {
    return false;
  }
}

/// One run of an action under a lease, driven by asio.
template <bool kResult, class Elector, class F, class Handler>
class RunOperation
    : public std::enable_shared_from_this<RunOperation<kResult, Elector, F, Handler>> {
  using T = leader::detail::action_result_t<F>;
  using V = action_value_t<F>;
  using Out = completion_value_t<kResult, F>;
  using Self = RunOperation;
  using HandlerExecutor = std::decay_t<decltype(::asio::prefer(
      std::declval<::asio::associated_executor_t<Handler, ::asio::any_io_executor>>(),
      ::asio::execution::outstanding_work.tracked))>;

  /// Requests a stop when the caller's cancellation slot is emitted (any cancellation type).
  struct CancelHandler {
    std::weak_ptr<Self> op;
    void operator()(::asio::cancellation_type type) const {
      if (type == ::asio::cancellation_type::none) return;
      if (auto self = op.lock()) self->stop_.request_stop();
    }
  };

  /// Posts a terminal cancellation to a running coroutine action (lease lost or caller stop).
  struct CancelAction {
    std::weak_ptr<Self> op;
    void operator()() const noexcept {
      if (auto self = op.lock()) {
        ::asio::post(*self->strand_, [self] {
          if (!self->action_running_ || self->cancel_emitted_) return;
          self->cancel_emitted_ = true;
          self->signal_.emit(::asio::cancellation_type::terminal);
        });
      }
    }
  };

 public:
  RunOperation(Handler handler, ::asio::any_io_executor ex, Elector elector, std::string lock,
               F action, BlockingPool& pool)
      : handler_(std::move(handler)),
        action_ex_(::asio::prefer(ex, ::asio::execution::outstanding_work.tracked)),
        handler_ex_(::asio::prefer(::asio::get_associated_executor(handler_, ex),
                                   ::asio::execution::outstanding_work.tracked)),
        strand_(make_strand_if_needed(ex)),
        elector_(std::move(elector)),
        lock_(std::move(lock)),
        action_(std::move(action)),
        pool_(pool),
        inline_(acquires_inline(*elector_)) {}

  /// Connects the caller's cancellation slot and starts acquiring on the pool.
  void start() {
    auto slot = ::asio::get_associated_cancellation_slot(handler_);
    if (slot.is_connected())
      slot.template emplace<CancelHandler>(CancelHandler{this->weak_from_this()});
    if (inline_) return acquire();  // cannot block: no hand-off (the handler is still posted)
    if constexpr (requires { elector_->acquire_async(lock_, stop_.get_token(), nullptr); }) {
      if (acquires_async(*elector_)) {  // attempts and pauses on the store's I/O thread
        std::exception_ptr error;
        // A copy: the outcome may complete the operation (which drops elector_) on the store's
        // thread before acquire_async returns here.
        const Elector elector = *elector_;
        try {
          elector.acquire_async(
              lock_, stop_.get_token(),
              [self = this->shared_from_this()](Acquisition acq, const std::exception_ptr& e) {
                self->acquired(std::move(acq), e);
              });
        } catch (...) {  // an invalid lock name: the operation completes with it
          error = std::current_exception();
        }
        // Only a local: once acquire_async returned, the store's thread owns the outcome.
        if (error) acquired({}, error);
        return;
      }
    }
    pool_.post([self = this->shared_from_this()] { self->acquire(); });
  }

 private:
  static auto make_strand_if_needed(const ::asio::any_io_executor& ex) {
    if constexpr (kIsAwaitable<T>) {
      return std::optional(::asio::make_strand(ex));
    } else {
      return std::monostate{};
    }
  }

  void acquire() {
    leader::detail::acquire_then(
        *elector_, lock_, stop_.get_token(),
        [this](Acquisition acq, std::exception_ptr error) { acquired(std::move(acq), error); });
  }

  /// The acquire's outcome, on the thread that acquired (a pool thread, the initiating thread,
  /// or the store's I/O thread, which must not block: the release then goes to the pool).
  void acquired(Acquisition acq, const std::exception_ptr& error) {
    if (error) {
      outcome_.acquire_error = error;
      return complete();
    }
    if (!acq) {
      outcome_.skipped = std::move(acq.skipped);
      return complete();
    }
    guard_.emplace(std::move(*acq.guard));
    outcome_.lease = guard_->info();
    if (stop_.stop_requested()) {  // cancelled just as the lease came: do not start the action
      outcome_.skipped = Skipped{SkipReason::cancelled, "cancelled before the action started"};
      return release_after_action();
    }
    if constexpr (kIsAwaitable<T>) {
      ::asio::post(*strand_, [self = this->shared_from_this()] { self->spawn_action(); });
    } else if (inline_) {  // inline when this thread already runs the action executor
      ::asio::dispatch(action_ex_, [self = this->shared_from_this()] { self->run_action(); });
    } else {
      ::asio::post(action_ex_, [self = this->shared_from_this()] { self->run_action(); });
    }
  }

  /// Releases where the action ended when that cannot block, else on BlockingPool::releases()
  /// (never behind the lease waits queued on `pool_`, which may wait for this release).
  void release_after_action() {
    if (inline_) return release();
    BlockingPool::releases().post([self = this->shared_from_this()] { self->release(); });
  }

  /// A plain action: runs to completion on the action executor.
  void run_action() {
    if (leader::detail::start_refused(stop_.get_token(), *guard_, outcome_))
      return release_after_action();
    try {
      leader::detail::ThreadHold on_this_thread(guard_->store(), guard_->context());
      if constexpr (std::is_void_v<V>) {
        leader::detail::invoke_action(*action_, guard_->context());
        outcome_.value.emplace();
      } else {
        outcome_.value.emplace(leader::detail::invoke_action(*action_, guard_->context()));
      }
    } catch (...) {
      outcome_.action_error = std::current_exception();
    }
    release_after_action();
  }

  /// A coroutine action: spawned on the strand, cancelled through `signal_` when the lease is
  /// lost or the caller cancels.
  void spawn_action() {
    if (leader::detail::start_refused(stop_.get_token(), *guard_, outcome_))
      return release_after_action();
    action_running_ = true;
    on_lease_stop_.emplace(guard_->context().stop_token(), CancelAction{this->weak_from_this()});
    on_caller_stop_.emplace(stop_.get_token(), CancelAction{this->weak_from_this()});
    ::asio::co_spawn(
        *strand_, drive(this->shared_from_this()),
        ::asio::bind_cancellation_slot(
            signal_.slot(), [self = this->shared_from_this()](const std::exception_ptr& e) {
              self->action_running_ = false;
              if (e) self->outcome_.action_error = e;
              self->on_lease_stop_.reset();
              self->on_caller_stop_.reset();
              self->release_after_action();
            }));
  }

  static ::asio::awaitable<void> drive(std::shared_ptr<Self> self) {
    T running = leader::detail::invoke_action(*self->action_, self->guard_->context());
    if constexpr (std::is_void_v<V>) {
      co_await std::move(running);
      self->outcome_.value.emplace();
    } else {
      self->outcome_.value.emplace(co_await std::move(running));
    }
  }

  void release() {
    leader::detail::release_guard(guard_, outcome_);
    complete();
  }

  /// Computes the result, drops everything of the caller's, and posts the handler to its
  /// executor (the handler's tracked executor travels with it: nothing of the caller's is left
  /// for the completing thread to drop once the handler may have run).
  void complete() {
    outcome_.caller_cancelled = stop_.stop_requested();
    std::exception_ptr error;
    std::optional<Out> out;
    try {
      if constexpr (kResult) {
        out.emplace(outcome_.result());
      } else {
        out.emplace(outcome_.plain());
      }
    } catch (...) {
      error = std::current_exception();
      out.emplace(placeholder<Out>());
    }
    outcome_ = {};
    action_.reset();
    elector_.reset();
    if constexpr (kIsAwaitable<T>) {
      strand_.reset();
    }
    action_ex_ = ::asio::any_io_executor();
    HandlerExecutor work = std::move(handler_ex_);
    // Posted through an untracked copy: the only tracked one is `work`, in the handler's lambda.
    auto post_ex = ::asio::prefer(work, ::asio::execution::outstanding_work.untracked);
    ::asio::post(post_ex, [handler = std::move(handler_), work = std::move(work), error,
                           out = std::move(*out)]() mutable {
      auto slot = ::asio::get_associated_cancellation_slot(handler);
      if (slot.is_connected()) slot.clear();
      std::move(handler)(error, std::move(out));
    });
  }

  Handler handler_;
  ::asio::any_io_executor action_ex_;  // tracked: keeps the action's context running
  HandlerExecutor handler_ex_;         // tracked: keeps the caller's context running
  // Coroutine actions only: the strand they run on, where `signal_` is emitted (dropped at
  // completion).
  std::conditional_t<kIsAwaitable<T>, std::optional<::asio::strand<::asio::any_io_executor>>,
                     std::monostate>
      strand_;
  std::optional<Elector> elector_;  // dropped at completion
  std::string lock_;
  std::optional<F> action_;  // dropped at completion
  BlockingPool& pool_;
  const bool inline_;  // acquire and release cannot block: no BlockingPool hand-off
  std::stop_source stop_;
  std::optional<LeaseGuard> guard_;
  leader::detail::Outcome<V> outcome_;
  ::asio::cancellation_signal signal_;  // used on strand_ only
  bool action_running_ = false;         // used on strand_ only
  bool cancel_emitted_ = false;         // used on strand_ only
  std::optional<std::stop_callback<CancelAction>> on_lease_stop_;
  std::optional<std::stop_callback<CancelAction>> on_caller_stop_;
};

/// The initiation passed to ::asio::async_initiate.
template <bool kResult, class Elector>
struct RunInitiation {
  ::asio::any_io_executor executor;
  Elector elector;
  BlockingPool* pool;

  template <class Handler, class F>
  void operator()(Handler&& handler, std::string lock, F&& action) const {
    using Op = RunOperation<kResult, Elector, std::decay_t<F>, std::decay_t<Handler>>;
    auto op = std::make_shared<Op>(std::forward<Handler>(handler), executor, elector,
                                   std::move(lock), std::forward<F>(action), *pool);
    op->start();
  }
};

}  // namespace detail
}  // namespace leader::asio
