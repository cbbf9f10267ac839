// leader::asio cancellation: while waiting for the lease, during a coroutine action, during a
// plain action, and by losing the lease; cancellation is never reported as ActionFailed.

#include <asio.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <atomic>
#include <system_error>
#include <thread>

#include "leader/asio/async_elector.hpp"
#include "support.hpp"

namespace leader::asio_test {
namespace {

using ::asio::awaitable;
using ::asio::use_awaitable;
using namespace std::chrono_literals;
using namespace ::asio::experimental::awaitable_operators;

awaitable<void> sleep_for(std::chrono::milliseconds d) {
  ::asio::steady_timer t(co_await ::asio::this_coro::executor, d);
  co_await t.async_wait(use_awaitable);
}

bool is_aborted(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::system_error& se) {
    return se.code() == ::asio::error::operation_aborted;
  } catch (...) {
    return false;
  }
}

class CancellationTest : public ::testing::TestWithParam<StoreCase> {
 protected:
  void SetUp() override { store_ = std::make_shared<ThreadCheckedStore>(GetParam().open()); }
  template <class Body>
  void run(Body& body) {
    store_->forbid(std::this_thread::get_id());
    ::asio::co_spawn(io_, body(), [](std::exception_ptr e) {
      if (e) std::rethrow_exception(e);
    });
    io_.run();
    EXPECT_EQ(store_->violations(), 0) << "a store call ran on the event-loop thread";
  }
  /// An elector that waits up to a minute for a held lock.
  LeaderElector patient() {
    ElectionOptions o = no_wait();
    o.wait_time = 60s;
    return LeaderElector(store_, o);
  }
  /// After a cancelled wait: nothing of ours is held and a new caller gets the lock at once.
  void expect_nothing_acquired(const std::string& lock) {
    EXPECT_TRUE(is_free(*store_, lock));
    LeaderElector fresh(store_, no_wait());
    EXPECT_TRUE(fresh.run_if_leader(lock, [] {}));
  }
  ::asio::io_context io_;
  std::shared_ptr<ThreadCheckedStore> store_;
};

TEST_P(CancellationTest, CancelWhileWaitingSkipsAndLeavesNothingAcquired) {
  const std::string lock = unique_lock("cancel-wait");
  LeaderElector elector = patient();
  std::optional<Acquisition> holder(elector.acquire(lock));
  ASSERT_TRUE(*holder);
  asio::AsyncElector async(elector, io_.get_executor());
  ::asio::cancellation_signal signal;
  bool ran = false;
  std::optional<RunResult<int>> result;
  auto body = [&]() -> awaitable<void> {
    ::asio::steady_timer later(io_, 100ms);
    later.async_wait([&](std::error_code) { signal.emit(::asio::cancellation_type::terminal); });
    result = co_await async.async_run_if_leader_result(
        lock,
        [&] {
          ran = true;
          return 1;
        },
        ::asio::bind_cancellation_slot(signal.slot(), use_awaitable));
  };
  run(body);
  EXPECT_FALSE(ran);
  ASSERT_TRUE(result && result->skipped());
  EXPECT_EQ(result->skip_reason(), SkipReason::cancelled);
  holder.reset();  // the other owner lets go; we must not hold anything
  expect_nothing_acquired(lock);
}

TEST_P(CancellationTest, TimeoutThroughAwaitableOperatorsCancelsThePlainWait) {
  const std::string lock = unique_lock("cancel-or");
  LeaderElector elector = patient();
  std::optional<Acquisition> holder(elector.acquire(lock));
  ASSERT_TRUE(*holder);
  asio::AsyncElector async(elector, io_.get_executor());
  std::size_t winner = 99;
  bool ran = false;
  auto body = [&]() -> awaitable<void> {
    auto r = co_await (async.async_run_if_leader(
                           lock, [&] { ran = true; }, use_awaitable) ||
                       sleep_for(100ms));
    winner = r.index();
  };
  run(body);
  EXPECT_EQ(winner, 1u) << "the timer wins; the election is cancelled";
  EXPECT_FALSE(ran);
  holder.reset();
  expect_nothing_acquired(lock);
}

TEST_P(CancellationTest, CancelDuringCoroutineActionStopsItAndReleasesTheLease) {
  const std::string lock = unique_lock("cancel-action");
  asio::AsyncElector async(LeaderElector(store_, no_wait()), io_.get_executor());
  ::asio::cancellation_signal signal;
  bool action_aborted = false;
  std::optional<RunResult<int>> result;
  auto body = [&]() -> awaitable<void> {
    result = co_await async.async_run_if_leader_result(
        lock,
        [&]() -> awaitable<int> {
          ::asio::post(io_, [&] { signal.emit(::asio::cancellation_type::terminal); });
          try {
            co_await sleep_for(60s);
          } catch (const std::system_error& e) {
            action_aborted = e.code() == ::asio::error::operation_aborted;
            throw;
          }
          co_return 1;
        },
        ::asio::bind_cancellation_slot(signal.slot(), use_awaitable));
  };
  run(body);
  EXPECT_TRUE(action_aborted);
  ASSERT_TRUE(result.has_value());
  EXPECT_FALSE(result->failed()) << "cancellation is never ActionFailed";
  ASSERT_TRUE(result->skipped());
  EXPECT_EQ(result->skip_reason(), SkipReason::cancelled);
  EXPECT_TRUE(is_free(*store_, lock));
}

TEST_P(CancellationTest, CancelDuringCoroutineActionRethrowsFromThePlainVariant) {
  const std::string lock = unique_lock("cancel-plain");
  asio::AsyncElector async(LeaderElector(store_, no_wait()), io_.get_executor());
  ::asio::cancellation_signal signal;
  std::exception_ptr error;
  auto body = [&]() -> awaitable<void> {
    try {
      co_await async.async_run_if_leader(
          lock,
          [&]() -> awaitable<void> {
            ::asio::post(io_, [&] { signal.emit(::asio::cancellation_type::terminal); });
            co_await sleep_for(60s);
          },
          ::asio::bind_cancellation_slot(signal.slot(), use_awaitable));
    } catch (...) {
      error = std::current_exception();
    }
  };
  run(body);
  EXPECT_TRUE(is_aborted(error)) << "the action's own cancellation error reaches the caller";
  EXPECT_TRUE(is_free(*store_, lock));
}

TEST_P(CancellationTest, CancelDuringPlainActionFiresItsStopToken) {
  const std::string lock = unique_lock("cancel-sync");
  ::asio::thread_pool workers(1);  // the plain action blocks, so it runs off the event loop
  asio::AsyncElector async(LeaderElector(store_, no_wait()), workers.get_executor());
  ::asio::cancellation_signal signal;
  std::atomic<bool> started{false};
  std::optional<RunResult<void>> result;
  auto body = [&]() -> awaitable<void> {
    auto poll = [&]() -> awaitable<void> {
      while (!started) co_await sleep_for(5ms);
      signal.emit(::asio::cancellation_type::terminal);
    };
    ::asio::co_spawn(io_, poll(), ::asio::detached);
    result = co_await async.async_run_if_leader_result(
        lock,
        [&](LeaderContext& ctx) {
          started = true;
          while (!ctx.stop_token().stop_requested()) std::this_thread::sleep_for(1ms);
          throw OperationCancelled();
        },
        ::asio::bind_cancellation_slot(signal.slot(), use_awaitable));
  };
  run(body);
  ASSERT_TRUE(result && result->skipped());
  EXPECT_EQ(result->skip_reason(), SkipReason::cancelled);
  EXPECT_TRUE(is_free(*store_, lock));
}

TEST_P(CancellationTest, LosingTheLeaseCancelsTheRunningCoroutine) {
  const std::string lock = unique_lock("lost");
  // No auto_extend: the lease's local deadline passes while the action still runs.
  asio::AsyncElector async(LeaderElector(store_, no_wait(GetParam().short_lease)),
                           io_.get_executor());
  bool action_aborted = false;
  bool stop_fired = false;
  std::optional<RunResult<int>> result;
  auto body = [&]() -> awaitable<void> {
    result = co_await async.async_run_if_leader_result(
        lock,
        [&](LeaderContext& ctx) -> awaitable<int> {
          try {
            co_await sleep_for(60s);
          } catch (const std::system_error& e) {
            action_aborted = e.code() == ::asio::error::operation_aborted;
            stop_fired = ctx.stop_token().stop_requested();
            throw;
          }
          co_return 1;
        },
        use_awaitable);
  };
  run(body);
  EXPECT_TRUE(action_aborted);
  EXPECT_TRUE(stop_fired);
  // Not a caller cancellation: the run failed because its lease was lost.
  ASSERT_TRUE(result && result->failed());
  EXPECT_TRUE(is_aborted(result->error()));
  // Released, or (if that release failed) expired on the server: another caller gets it.
  ElectionOptions later = no_wait();
  later.wait_time = 3 * GetParam().short_lease;
  EXPECT_TRUE(LeaderElector(store_, later).run_if_leader(lock, [] {}));
}

TEST_P(CancellationTest, CancellingAfterCompletionChangesNothing) {
  const std::string lock = unique_lock("late");
  asio::AsyncElector async(LeaderElector(store_, no_wait()), io_.get_executor());
  ::asio::cancellation_signal signal;
  std::optional<int> got;
  auto body = [&]() -> awaitable<void> {
    got = co_await async.async_run_if_leader(
        lock, [] { return 4; }, ::asio::bind_cancellation_slot(signal.slot(), use_awaitable));
    signal.emit(::asio::cancellation_type::terminal);
    co_await sleep_for(1ms);
  };
  run(body);
  EXPECT_EQ(got, 4);
  expect_nothing_acquired(lock);
}

LEADER_ASIO_STORES(CancellationTest);

}  // namespace
}  // namespace leader::asio_test
