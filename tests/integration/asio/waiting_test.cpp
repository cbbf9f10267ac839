// Waiting without a thread (issue 14, target 5): on a store with asynchronous I/O of its own
// (Redis: detail::AsyncAttempts), an async_run_if_leader that waits for a held lock holds no
// thread: its attempts and its pauses run on the store's I/O thread. Against the real server of
// scripts/test-servers.sh (LEADER_TEST_REDIS_URI).

#include <dirent.h>

#include <algorithm>
#include <asio.hpp>
#include <atomic>
#include <system_error>
#include <thread>
#include <vector>

#include "leader/asio/async_elector.hpp"
#include "leader/detail/capabilities.hpp"
#include "support.hpp"

namespace leader::asio_test {
namespace {

using ::asio::awaitable;
using ::asio::use_awaitable;
using namespace std::chrono_literals;

// Threads of this process now.
int thread_count() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

std::vector<StoreCase> async_cases() {
  std::vector<StoreCase> cases;
#ifdef LEADER_TEST_HAS_REDIS
  cases.push_back(network_case("redis", "LEADER_TEST_REDIS_URI", "redis://127.0.0.1:16379"));
#endif
  return cases;
}

class WaitingTest : public ::testing::TestWithParam<StoreCase> {
 protected:
  void SetUp() override { store_ = GetParam().open(); }
  ElectionOptions waiting(Duration wait, Duration lease = 10s) const {
    ElectionOptions o;
    o.wait_time = wait;
    o.lease_time = lease;
    return o;
  }
  ::asio::io_context io_;
  std::shared_ptr<LeaseStore> store_;
};

TEST_P(WaitingTest, TheStoreAttemptsAsynchronouslyAndTheElectorUsesIt) {
  auto* async = store_->capabilities().async;
  ASSERT_NE(async, nullptr);
  EXPECT_TRUE(async->attempts_async());
  EXPECT_TRUE(LeaderElector(store_, waiting(1s)).acquires_async());
  // On a test clock the elector waits its blocking way (its pauses are that clock's).
  EXPECT_FALSE(
      LeaderElector(store_, waiting(1s), ElectorHooks{.clock = std::make_shared<FakeClock>()})
          .acquires_async());
}

TEST_P(WaitingTest, ThousandsOfWaitingCoroutinesHoldNoThreadAndAllGetTheLockInTurn) {
  constexpr int kWaiters = 2000;
  const std::string lock = unique_lock("thousands");
  // The holder: another elector (its own connections), as another process would hold it.
  LeaderElector holder(GetParam().open(), waiting(0s, 30s));
  auto held = holder.acquire(lock);
  ASSERT_TRUE(held);
  const std::uint64_t first_token = held.guard->info().fencing_token;

  asio::AsyncElector async(LeaderElector(store_, waiting(60s)), io_.get_executor());
  const int threads_before = thread_count();
  std::atomic<int> running{0};
  int most_running = 0;
  int ran = 0;
  int skipped = 0;
  std::vector<std::uint64_t> tokens;
  for (int i = 0; i < kWaiters; ++i) {
    ::asio::co_spawn(
        io_,
        [&]() -> awaitable<void> {
          const bool got = co_await async.async_run_if_leader(
              lock,
              [&](LeaderContext& ctx) {
                most_running = std::max(most_running, ++running);
                tokens.push_back(ctx.fencing_token());
                --running;
              },
              use_awaitable);
          (got ? ran : skipped) += 1;
        },
        ::asio::detached);
  }
  // Let every waiter make its first attempt and start waiting, then count the threads.
  int threads_waiting = 0;
  std::thread observer([&] {
    std::this_thread::sleep_for(1500ms);
    threads_waiting = thread_count();
    held.guard->release();
  });
  io_.run();
  observer.join();
  EXPECT_EQ(ran, kWaiters);
  EXPECT_EQ(skipped, 0);
  EXPECT_EQ(most_running, 1);
  // Each holder's token is greater than the one before it (the server's fence counter).
  ASSERT_EQ(tokens.size(), static_cast<std::size_t>(kWaiters));
  EXPECT_GT(tokens.front(), first_token);
  EXPECT_TRUE(std::is_sorted(tokens.begin(), tokens.end()));
  EXPECT_EQ(std::adjacent_find(tokens.begin(), tokens.end()), tokens.end());
  // 2000 waiters and at most a handful of new threads (the store's I/O thread, the renewal
  // scheduler, the pool threads that release): a blocking wait would hold a thread each.
  RecordProperty("threads_before", threads_before);
  RecordProperty("threads_waiting", threads_waiting);
  EXPECT_LE(threads_waiting - threads_before, 8)
      << threads_before << " threads before, " << threads_waiting << " while 2000 waited";
  EXPECT_TRUE(is_free(*store_, lock));
}

TEST_P(WaitingTest, ACancelledWaiterEndsItsWaitAtOnceAndTakesNothing) {
  const std::string lock = unique_lock("cancel");
  LeaderElector holder(GetParam().open(), waiting(0s, 30s));
  auto held = holder.acquire(lock);
  ASSERT_TRUE(held);
  asio::AsyncElector async(LeaderElector(store_, waiting(60s)), io_.get_executor());
  ::asio::cancellation_signal cancel;
  std::optional<RunResult<void>> result;
  bool ran = false;
  ::asio::co_spawn(
      io_,
      [&]() -> awaitable<void> {
        result = co_await async.async_run_if_leader_result(
            lock, [&] { ran = true; },
            ::asio::bind_cancellation_slot(cancel.slot(), use_awaitable));
      },
      ::asio::detached);
  ::asio::steady_timer t(io_, 300ms);
  t.async_wait([&](std::error_code) { cancel.emit(::asio::cancellation_type::terminal); });
  const auto start = std::chrono::steady_clock::now();
  io_.run();
  ASSERT_TRUE(result.has_value());
  ASSERT_TRUE(result->skipped());
  EXPECT_EQ(result->skip_reason(), SkipReason::cancelled);
  EXPECT_FALSE(ran);
  // It ended with the cancellation, not at its 60 s wait (a bound, not a timing: 50x margin).
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
  // The holder still holds it: the waiter took nothing.
  const LockState state = store_->inspect(lock, Deadline::after(5s));
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].fencing_token, held.guard->info().fencing_token);
}

TEST_P(WaitingTest, AWaiterTakesALockWhoseHolderCrashedOnceTheServerExpiredIt) {
  // The holder never releases (it "crashed": abandon leaves the key to expire on the server,
  // which publishes nothing); the waiter's pauses end and it asks again: the grant is the
  // server's, after its own expiry.
  const std::string lock = unique_lock("crashed");
  LeaderElector holder(GetParam().open(), waiting(0s, 700ms));
  auto held = holder.acquire(lock);
  ASSERT_TRUE(held);
  const std::uint64_t crashed_token = held.guard->info().fencing_token;
  held.guard->abandon();
  asio::AsyncElector async(LeaderElector(store_, waiting(20s)), io_.get_executor());
  std::uint64_t token = 0;
  std::optional<bool> server_shows_only_it;
  ::asio::co_spawn(
      io_,
      [&]() -> awaitable<void> {
        co_await async.async_run_if_leader(
            lock,
            [&](LeaderContext& ctx) {
              token = ctx.fencing_token();
              const LockState s = store_->inspect(lock, Deadline::after(5s));
              server_shows_only_it = s.holders.size() == 1 && s.holders[0].fencing_token == token;
            },
            use_awaitable);
      },
      ::asio::detached);
  io_.run();
  EXPECT_GT(token, crashed_token);
  EXPECT_EQ(server_shows_only_it, true) << "the server shows the waiter as the only holder";
}

TEST_P(WaitingTest, TheLeaseOfAnAsyncGrantStopsItsActionBeforeTheServerExpiresIt) {
  // Who observes the server's expiry: the action, when its stop signal fires, asks the server,
  // which must still show it as the holder (the local deadline runs from before the attempt was
  // handed to the store's I/O thread, so it ends first).
  const std::string lock = unique_lock("deadline");
  ElectionOptions o = waiting(5s, 1s);
  o.auto_extend = false;
  asio::AsyncElector async(LeaderElector(store_, o), io_.get_executor());
  std::optional<bool> server_still_held;
  std::uint64_t token = 0;
  ::asio::co_spawn(
      io_,
      [&]() -> awaitable<void> {
        (void)co_await async.async_run_if_leader_result(
            lock,
            [&](LeaderContext& ctx) -> awaitable<void> {
              token = ctx.fencing_token();
              ::asio::steady_timer t(co_await ::asio::this_coro::executor, 30s);
              try {
                co_await t.async_wait(use_awaitable);
              } catch (const std::system_error&) {  // cancelled by the lease's stop
              }
              const LockState s = store_->inspect(lock, Deadline::after(5s));
              server_still_held = s.holders.size() == 1 && s.holders[0].fencing_token == token;
            },
            use_awaitable);
      },
      ::asio::detached);
  io_.run();
  EXPECT_GT(token, 0u);
  EXPECT_EQ(server_still_held, true) << "the server had already expired the lease";
}

TEST_P(WaitingTest, AnOutageWhileWaitingIsABackendErrorNotASkip) {
  // Nothing listens on port 1: every attempt fails (unavailable, unknown outcome); at the end
  // of the wait that is the result, as from a blocking acquire.
  auto dead = open("redis://127.0.0.1:1?connect_timeout=200ms&command_timeout=200ms");
  ASSERT_TRUE(LeaderElector(dead, waiting(600ms)).acquires_async());
  asio::AsyncElector async(LeaderElector(dead, waiting(600ms)), io_.get_executor());
  std::exception_ptr error;
  bool ran = false;
  ::asio::co_spawn(
      io_,
      [&]() -> awaitable<void> {
        co_await async.async_run_if_leader(
            unique_lock("outage"), [&] { ran = true; }, use_awaitable);
      },
      [&](std::exception_ptr e) { error = e; });
  io_.run();
  EXPECT_FALSE(ran);
  ASSERT_TRUE(error);
  try {
    std::rethrow_exception(error);
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::unavailable) << e.what();
  }
}

TEST_P(WaitingTest, AsyncAndBlockingWaitersOfOneLockExcludeEachOther) {
  const std::string lock = unique_lock("mixed");
  asio::AsyncElector async(LeaderElector(store_, waiting(30s, 5s)), io_.get_executor());
  LeaderElector blocking(GetParam().open(), waiting(30s, 5s));
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  std::atomic<int> ran{0};
  auto action = [&] {
    const int now = ++running;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(2ms);
    --running;
    ++ran;
  };
  for (int i = 0; i < 50; ++i)
    ::asio::co_spawn(
        io_,
        [&]() -> awaitable<void> {
          co_await async.async_run_if_leader(lock, action, use_awaitable);
        },
        ::asio::detached);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) (void)blocking.run_if_leader(lock, action);
    });
  io_.run();
  for (auto& t : threads) t.join();
  EXPECT_EQ(ran.load(), 90);
  EXPECT_EQ(most.load(), 1);
}

// Where waits do hold threads (every store without asynchronous attempts), a pool full of
// waiters must not hold up the release they wait for: releases have a pool of their own.
TEST(PoolWaitingTest, AReleaseNeverQueuesBehindTheWaitsThatFillThePool) {
  ::asio::io_context io;
  BlockingPool pool(2);
  ElectionOptions o;
  o.wait_time = 60s;
  o.lease_time = 10s;
  auto store = make_memory_store();
  asio::AsyncElector async(LeaderElector(store, o), io.get_executor(), pool);
  ASSERT_FALSE(async.elector().acquires_async());
  const std::string lock = unique_lock("full-pool");
  int ran = 0;
  for (int i = 0; i < 6; ++i)
    ::asio::co_spawn(
        io,
        [&]() -> awaitable<void> {
          if (co_await async.async_run_if_leader(
                  lock, [&] { ++ran; }, use_awaitable))
            co_return;
          ADD_FAILURE() << "skipped";
        },
        ::asio::detached);
  const auto start = std::chrono::steady_clock::now();
  io.run();
  EXPECT_EQ(ran, 6);
  // A bound far above the run (milliseconds) and far below the 60 s waits it would take.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
}

INSTANTIATE_TEST_SUITE_P(Stores, WaitingTest, ::testing::ValuesIn(async_cases()),
                         [](const ::testing::TestParamInfo<StoreCase>& i) { return i.param.name; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(WaitingTest);

}  // namespace
}  // namespace leader::asio_test
