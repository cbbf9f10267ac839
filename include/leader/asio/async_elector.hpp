#pragma once
/// @file async_elector.hpp
/// The leader::asio component: run_if_leader as an Asio asynchronous operation, usable with any
/// completion token (`::asio::use_awaitable`, callbacks, `::asio::use_future`,
/// `::asio::experimental::deferred`).
///
/// ```cpp
/// leader::asio::AsyncElector async(elector, io.get_executor());
/// std::optional<int> r = co_await async.async_run_if_leader("job", action, ::asio::use_awaitable);
/// ```
///
/// What is NOT guaranteed: that the wait for the lease starts at once (it runs on a BlockingPool
/// thread and queues when all are busy), or that a plain (non-coroutine) action can be
/// interrupted: it sees cancellation only through LeaderContext::stop_token().
///
/// Threads: the store is called only on BlockingPool threads, never on the caller's executor,
/// unless its calls cannot block (the elector's acquire_never_blocks(): a store declaring
/// Capabilities::never_blocks, e.g. the memory store, and wait_time 0): then the acquire runs in
/// the initiating call and the release where the action ended, with no pool hand-off.
/// The action runs on the AsyncElector's executor (a coroutine action on a strand of it). The
/// completion handler runs on its associated executor (for `use_awaitable`, the awaiting
/// coroutine's executor), or on the AsyncElector's executor when it has none; it is never invoked
/// from inside the initiating call.
///
/// Completion signature: `void(std::exception_ptr, R)` where R is `bool` (void actions) or
/// `std::optional<T>` for async_run_if_leader, and `RunResult<T>` for async_run_if_leader_result.
/// An action returning `::asio::awaitable<T>` is awaited; T is its value type.
///
/// Cancellation (any cancellation type on the handler's slot): while waiting for the lease,
/// nothing is acquired and the operation completes as skipped (false / empty /
/// Skipped{cancelled}); while a coroutine action runs, it is cancelled (its pending operation
/// fails with operation_aborted), the lease is released, and the result variant reports
/// Skipped{cancelled}, never ActionFailed. Losing the lease cancels a running coroutine action
/// the same way; a plain action sees LeaderContext::stop_token() fire.

#include <asio.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "leader/asio/detail/run_operation.hpp"
#include "leader/async.hpp"
#include "leader/elector.hpp"

namespace leader::asio {

/// Starts run_if_leader as an asynchronous operation: the action runs on `executor`, the lease
/// is waited for and released on `pool`. See the file comment for threads and cancellation.
template <AsyncElectable Elector, class F, class CompletionToken>
auto async_run_if_leader(const ::asio::any_io_executor& executor, const Elector& elector,
                         std::string_view lock, F&& action, CompletionToken&& token,
                         BlockingPool& pool = BlockingPool::shared()) {
  using Sig = detail::signature_t<false, std::decay_t<F>>;
  return ::asio::async_initiate<CompletionToken, Sig>(
      detail::RunInitiation<false, Elector>{executor, elector, &pool}, token, std::string(lock),
      std::forward<F>(action));
}

/// Like async_run_if_leader, completing with RunResult<T> (Elected / Skipped / ActionFailed);
/// only backend errors complete with an exception.
template <AsyncElectable Elector, class F, class CompletionToken>
auto async_run_if_leader_result(const ::asio::any_io_executor& executor, const Elector& elector,
                                std::string_view lock, F&& action, CompletionToken&& token,
                                BlockingPool& pool = BlockingPool::shared()) {
  using Sig = detail::signature_t<true, std::decay_t<F>>;
  return ::asio::async_initiate<CompletionToken, Sig>(
      detail::RunInitiation<true, Elector>{executor, elector, &pool}, token, std::string(lock),
      std::forward<F>(action));
}

/// An elector bound to an executor, the way an Asio socket is bound to one: its operations run
/// actions on that executor and complete there unless the handler says otherwise. Cheap to copy;
/// thread-safe like the elector it wraps.
template <AsyncElectable Elector>
class AsyncElector {
 public:
  /// The executor actions run on.
  using executor_type = ::asio::any_io_executor;

  /// Binds `elector` (copied; copies share their lease state) to `executor`; lease waits run on
  /// `pool`, which must outlive every operation started here.
  AsyncElector(Elector elector, executor_type executor, BlockingPool& pool = BlockingPool::shared())
      : elector_(std::move(elector)), executor_(std::move(executor)), pool_(&pool) {}

  /// The executor actions run on and handlers without one of their own complete on.
  [[nodiscard]] executor_type get_executor() const noexcept { return executor_; }
  /// The wrapped elector.
  [[nodiscard]] const Elector& elector() const noexcept { return elector_; }

  /// Runs `action` if this replica gets the lease; completes with `bool` / `std::optional<T>`.
  template <class F, class CompletionToken>
  auto async_run_if_leader(std::string_view lock, F&& action, CompletionToken&& token) const {
    return leader::asio::async_run_if_leader(executor_, elector_, lock, std::forward<F>(action),
                                             std::forward<CompletionToken>(token), *pool_);
  }

  /// Runs `action` if this replica gets the lease; completes with RunResult<T>.
  template <class F, class CompletionToken>
  auto async_run_if_leader_result(std::string_view lock, F&& action,
                                  CompletionToken&& token) const {
    return leader::asio::async_run_if_leader_result(executor_, elector_, lock,
                                                    std::forward<F>(action),
                                                    std::forward<CompletionToken>(token), *pool_);
  }

 private:
  Elector elector_;
  executor_type executor_;
  BlockingPool* pool_;
};

}  // namespace leader::asio
