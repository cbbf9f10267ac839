// leader::asio: completion tokens, coroutine actions, many coroutines contending on one thread,
// group elections and exceptions, against every built store.

#include <algorithm>
#include <asio.hpp>
#include <asio/experimental/deferred.hpp>
#include <stdexcept>
#include <thread>

#include "leader/asio/async_elector.hpp"
#include "support.hpp"

namespace leader::asio_test {
namespace {

using ::asio::awaitable;
using ::asio::use_awaitable;
using namespace std::chrono_literals;

awaitable<void> sleep_for(std::chrono::milliseconds d) {
  ::asio::steady_timer t(co_await ::asio::this_coro::executor, d);
  co_await t.async_wait(use_awaitable);
}

class CoroutineTest : public ::testing::TestWithParam<StoreCase> {
 protected:
  void SetUp() override { store_ = std::make_shared<ThreadCheckedStore>(GetParam().open()); }
  /// Runs `body` as a coroutine on io_ (this thread) until everything finishes.
  template <class Body>
  void run(Body& body) {
    store_->forbid(std::this_thread::get_id());
    ::asio::co_spawn(io_, body(), [](std::exception_ptr e) {
      if (e) std::rethrow_exception(e);
    });
    io_.run();
    EXPECT_EQ(store_->violations(), 0) << "a store call ran on the event-loop thread";
  }
  ::asio::io_context io_;
  std::shared_ptr<ThreadCheckedStore> store_;
};

TEST_P(CoroutineTest, AwaitableActionValueIsReturnedAndTheLeaseReleased) {
  const std::string lock = unique_lock("value");
  asio::AsyncElector async(LeaderElector(store_, no_wait()), io_.get_executor());
  std::optional<int> got;
  std::uint64_t token = 0;
  auto body = [&]() -> awaitable<void> {
    got = co_await async.async_run_if_leader(
        lock,
        [&](LeaderContext& ctx) -> awaitable<int> {
          token = ctx.fencing_token();
          co_await sleep_for(1ms);
          co_return 42;
        },
        use_awaitable);
  };
  run(body);
  EXPECT_EQ(got, 42);
  EXPECT_GT(token, 0u);
  EXPECT_TRUE(is_free(*store_, lock));
}

TEST_P(CoroutineTest, PlainAndVoidActionsMirrorRunIfLeader) {
  const std::string lock = unique_lock("plain");
  asio::AsyncElector async(LeaderElector(store_, no_wait()), io_.get_executor());
  std::optional<std::string> text;
  bool ran_void = false;
  bool ran_coroutine_void = false;
  std::thread::id action_thread;
  auto body = [&]() -> awaitable<void> {
    text = co_await async.async_run_if_leader(
        lock,
        [&] {
          action_thread = std::this_thread::get_id();
          return std::string("ok");
        },
        use_awaitable);
    ran_void = co_await async.async_run_if_leader(
        lock, [] {}, use_awaitable);
    ran_coroutine_void = co_await async.async_run_if_leader(
        lock, []() -> awaitable<void> { co_await sleep_for(1ms); }, use_awaitable);
  };
  run(body);
  EXPECT_EQ(text, "ok");
  EXPECT_EQ(action_thread, std::this_thread::get_id()) << "actions run on the elector's executor";
  EXPECT_TRUE(ran_void);
  EXPECT_TRUE(ran_coroutine_void);
}

TEST_P(CoroutineTest, ContentionIsSkippedWithoutRunningTheAction) {
  const std::string lock = unique_lock("contention");
  LeaderElector elector(store_, no_wait());
  Acquisition held = elector.acquire(lock);
  ASSERT_TRUE(held);
  asio::AsyncElector async(elector, io_.get_executor());
  bool ran = false;
  std::optional<int> plain;
  std::optional<RunResult<int>> result;
  auto body = [&]() -> awaitable<void> {
    plain = co_await async.async_run_if_leader(
        lock,
        [&] {
          ran = true;
          return 1;
        },
        use_awaitable);
    result = co_await async.async_run_if_leader_result(
        lock,
        [&] {
          ran = true;
          return 1;
        },
        use_awaitable);
  };
  run(body);
  EXPECT_FALSE(ran);
  EXPECT_FALSE(plain.has_value());
  ASSERT_TRUE(result && result->skipped());
  EXPECT_EQ(result->skip_reason(), SkipReason::contention);
}

TEST_P(CoroutineTest, CallbackTokenCompletesOnTheElectorsExecutor) {
  const std::string lock = unique_lock("callback");
  asio::AsyncElector async(LeaderElector(store_, no_wait()), io_.get_executor());
  store_->forbid(std::this_thread::get_id());
  std::thread::id completed_on;
  std::optional<int> got;
  async.async_run_if_leader(
      lock, [] { return 5; },
      [&](std::exception_ptr e, std::optional<int> v) {
        EXPECT_FALSE(e);
        completed_on = std::this_thread::get_id();
        got = v;
      });
  EXPECT_FALSE(got.has_value()) << "never completes inside the initiating call";
  io_.run();
  EXPECT_EQ(got, 5);
  EXPECT_EQ(completed_on, std::this_thread::get_id());
  EXPECT_EQ(store_->violations(), 0);
}

TEST_P(CoroutineTest, UseFutureTokenYieldsTheValueAndTheError) {
  const std::string lock = unique_lock("future");
  auto guard = ::asio::make_work_guard(io_);
  std::thread runner([this] { io_.run(); });
  store_->forbid(runner.get_id());
  asio::AsyncElector async(LeaderElector(store_, no_wait()), io_.get_executor());
  std::future<std::optional<int>> ok = async.async_run_if_leader(
      lock, [] { return 9; }, ::asio::use_future);
  EXPECT_EQ(ok.get(), 9);
  std::future<RunResult<void>> failed = async.async_run_if_leader_result(
      lock,
      []() -> awaitable<void> {
        throw std::runtime_error("boom");
        co_return;
      },
      ::asio::use_future);
  RunResult<void> r = failed.get();
  EXPECT_TRUE(r.failed());
  std::future<bool> thrown = async.async_run_if_leader(
      lock, [] { throw std::invalid_argument("bad"); }, ::asio::use_future);
  EXPECT_THROW(thrown.get(), std::invalid_argument);
  guard.reset();
  runner.join();
  EXPECT_EQ(store_->violations(), 0);
  EXPECT_TRUE(is_free(*store_, lock));
}

TEST_P(CoroutineTest, DeferredTokenStartsOnlyWhenInvoked) {
  const std::string lock = unique_lock("deferred");
  asio::AsyncElector async(LeaderElector(store_, no_wait()), io_.get_executor());
  auto op = async.async_run_if_leader(
      lock, [] { return 3; }, ::asio::experimental::deferred);
  EXPECT_EQ(store_->calls(), 0) << "a deferred operation does nothing until invoked";
  std::optional<int> got;
  std::move(op)([&](std::exception_ptr e, std::optional<int> v) {
    EXPECT_FALSE(e);
    got = v;
  });
  io_.run();
  EXPECT_EQ(got, 3);
}

TEST_P(CoroutineTest, ThousandsOfCoroutinesContendOnOneThread) {
  constexpr int kCoroutines = 2000;
  constexpr int kLocks = 10;
  std::vector<std::string> locks;
  for (int i = 0; i < kLocks; ++i) locks.push_back(unique_lock("many"));
  asio::AsyncElector async(LeaderElector(store_, no_wait()), io_.get_executor());
  std::vector<int> active(kLocks, 0);
  int overlaps = 0, elected = 0, skipped = 0, failed = 0, finished = 0;
  auto one = [&](int i) -> awaitable<void> {
    const int l = i % kLocks;
    RunResult<void> r = co_await async.async_run_if_leader_result(
        locks[l],
        [&, l]() -> awaitable<void> {
          if (++active[l] > 1) ++overlaps;
          co_await sleep_for(1ms);
          --active[l];
        },
        use_awaitable);
    elected += r.elected() ? 1 : 0;
    skipped += r.skipped() ? 1 : 0;
    failed += r.failed() ? 1 : 0;
    ++finished;
  };
  store_->forbid(std::this_thread::get_id());
  for (int i = 0; i < kCoroutines; ++i) ::asio::co_spawn(io_, one(i), ::asio::detached);
  io_.run();
  EXPECT_EQ(finished, kCoroutines);
  EXPECT_EQ(overlaps, 0) << "two coroutines held one lock at once";
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(elected + skipped, kCoroutines);
  EXPECT_GE(elected, kLocks);
  EXPECT_EQ(store_->violations(), 0);
  for (const auto& lock : locks) EXPECT_TRUE(is_free(*store_, lock));
}

TEST_P(CoroutineTest, GroupElectionKeepsAtMostMaxLeaders) {
  constexpr int kCoroutines = 300;
  const std::string lock = unique_lock("group");
  GroupOptions options;
  options.election.wait_time = Duration{0};
  options.election.lease_time = 30s;
  options.max_leaders = 3;
  asio::AsyncElector async(LeaderGroupElector(store_, options), io_.get_executor());
  int active = 0, max_active = 0, elected = 0, bad_slot = 0, interrupted = 0;
  auto one = [&]() -> awaitable<void> {
    std::optional<int> slot = co_await async.async_run_if_leader(
        lock,
        [&](LeaderContext& ctx) -> awaitable<int> {
          max_active = std::max(max_active, ++active);
          try {
            co_await sleep_for(5ms);
          } catch (...) {  // cancelled: only a lease at risk may stop it (the overlap stays exact)
            if (ctx.still_leader()) ++interrupted;
          }
          --active;
          co_return ctx.slot();
        },
        use_awaitable);
    if (slot) {
      ++elected;
      if (*slot < 0 || *slot >= 3) ++bad_slot;
    }
  };
  store_->forbid(std::this_thread::get_id());
  for (int i = 0; i < kCoroutines; ++i) ::asio::co_spawn(io_, one(), ::asio::detached);
  io_.run();
  EXPECT_LE(max_active, 3);
  EXPECT_EQ(interrupted, 0) << "an action was cancelled while its lease was safe";
  EXPECT_GE(elected, 3);
  EXPECT_EQ(bad_slot, 0);
  EXPECT_EQ(store_->violations(), 0);
}

TEST_P(CoroutineTest, CoroutineActionExceptionsPropagateAndReleaseTheLease) {
  const std::string lock = unique_lock("throws");
  asio::AsyncElector async(LeaderElector(store_, no_wait()), io_.get_executor());
  std::string plain_error;
  std::optional<RunResult<int>> result;
  auto body = [&]() -> awaitable<void> {
    try {
      co_await async.async_run_if_leader(
          lock,
          []() -> awaitable<int> {
            co_await sleep_for(1ms);
            throw std::logic_error("after a suspension");
          },
          use_awaitable);
    } catch (const std::logic_error& e) {
      plain_error = e.what();
    }
    result = co_await async.async_run_if_leader_result(
        lock,
        []() -> awaitable<int> {
          throw std::out_of_range("at once");
          co_return 0;
        },
        use_awaitable);
  };
  run(body);
  EXPECT_EQ(plain_error, "after a suspension");
  ASSERT_TRUE(result && result->failed());
  EXPECT_THROW(std::rethrow_exception(result->error()), std::out_of_range);
  ASSERT_NE(result->lease(), nullptr);
  EXPECT_GT(result->lease()->fencing_token, 0u);
  EXPECT_TRUE(is_free(*store_, lock));
}

TEST_P(CoroutineTest, ElectedResultCarriesTheLease) {
  const std::string lock = unique_lock("result");
  asio::AsyncElector async(LeaderElector(store_, no_wait()), io_.get_executor());
  std::optional<RunResult<std::string>> result;
  auto body = [&]() -> awaitable<void> {
    result = co_await async.async_run_if_leader_result(
        lock, [](LeaderContext& ctx) -> awaitable<std::string> { co_return ctx.lock_name(); },
        use_awaitable);
  };
  run(body);
  ASSERT_TRUE(result && result->elected());
  EXPECT_EQ(result->value(), lock);
  EXPECT_EQ(result->lease()->lock, lock);
}

LEADER_ASIO_STORES(CoroutineTest);

TEST(CoroutineBackendErrors, BackendFailureCompletesWithTheBackendError) {
  auto store = make_memory_store();
  set_memory_store_unavailable(*store, true);
  ::asio::io_context io;
  asio::AsyncElector async(LeaderElector(store, no_wait()), io.get_executor());
  std::exception_ptr plain, result;
  async.async_run_if_leader(
      "down", [] { return 1; }, [&](std::exception_ptr e, std::optional<int>) { plain = e; });
  async.async_run_if_leader_result(
      "down", [] { return 1; }, [&](std::exception_ptr e, RunResult<int>) { result = e; });
  io.run();
  EXPECT_THROW(std::rethrow_exception(plain), BackendError);
  EXPECT_THROW(std::rethrow_exception(result), BackendError);
}

}  // namespace
}  // namespace leader::asio_test
