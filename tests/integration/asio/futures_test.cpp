// leader/async.hpp: run_if_leader_async / run_if_leader_result_async (std::future) and the
// executor-dispatch model run_if_leader_on, with std::stop_token cancellation.

#include <asio.hpp>
#include <atomic>
#include <future>
#include <stdexcept>
#include <thread>

#include "leader/async.hpp"
#include "support.hpp"

namespace leader::asio_test {
namespace {

using namespace std::chrono_literals;

class FuturesTest : public ::testing::TestWithParam<StoreCase> {
 protected:
  void SetUp() override { store_ = std::make_shared<ThreadCheckedStore>(GetParam().open()); }
  std::shared_ptr<ThreadCheckedStore> store_;
};

TEST_P(FuturesTest, ValuesVoidAndSkipsMirrorRunIfLeader) {
  const std::string lock = unique_lock("fut");
  LeaderElector elector(store_, no_wait());
  std::future<std::optional<int>> value = run_if_leader_async(elector, lock, [] { return 7; });
  EXPECT_EQ(value.get(), 7);
  std::future<bool> done = run_if_leader_async(elector, lock, [](LeaderContext&) {});
  EXPECT_TRUE(done.get());

  Acquisition held = elector.acquire(lock);
  ASSERT_TRUE(held);
  bool ran = false;
  EXPECT_FALSE(run_if_leader_async(elector, lock, [&] {
                 ran = true;
                 return 1;
               }).get());
  RunResult<int> skipped = run_if_leader_result_async(elector, lock, [&] {
                             ran = true;
                             return 1;
                           }).get();
  EXPECT_TRUE(skipped.skipped());
  EXPECT_EQ(skipped.skip_reason(), SkipReason::contention);
  EXPECT_FALSE(ran);
}

TEST_P(FuturesTest, ActionReturningAFutureKeepsTheLeaseUntilItIsReady) {
  const std::string lock = unique_lock("fut-fut");
  LeaderElector elector(store_, no_wait());
  std::promise<std::string> inner;
  auto outer = run_if_leader_async(elector, lock, [&] { return inner.get_future(); });
  static_assert(std::is_same_v<decltype(outer), std::future<std::optional<std::string>>>);
  // The action has returned its future; the lease stays held until that future is ready.
  while (is_free(*store_, lock)) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(outer.wait_for(10ms), std::future_status::timeout);
  inner.set_value("done");
  EXPECT_EQ(outer.get(), "done");
  EXPECT_TRUE(is_free(*store_, lock));
}

TEST_P(FuturesTest, ExceptionsPropagateOrBecomeActionFailed) {
  const std::string lock = unique_lock("fut-throw");
  LeaderElector elector(store_, no_wait());
  auto thrown = run_if_leader_async(elector, lock, []() -> int { throw std::range_error("r"); });
  EXPECT_THROW(thrown.get(), std::range_error);
  RunResult<void> failed =
      run_if_leader_result_async(elector, lock, [] { throw std::logic_error("l"); }).get();
  ASSERT_TRUE(failed.failed());
  EXPECT_THROW(std::rethrow_exception(failed.error()), std::logic_error);
  EXPECT_TRUE(is_free(*store_, lock));
}

TEST_P(FuturesTest, StopWhileWaitingSkipsAndLeavesNothingAcquired) {
  const std::string lock = unique_lock("fut-stop-wait");
  ElectionOptions o = no_wait();
  o.wait_time = 60s;
  LeaderElector elector(store_, o);
  std::optional<Acquisition> holder(elector.acquire(lock));
  ASSERT_TRUE(*holder);
  std::stop_source stop;
  bool ran = false;
  auto result = run_if_leader_result_async(
      elector, lock, [&] { ran = true; }, stop.get_token());
  EXPECT_EQ(result.wait_for(20ms), std::future_status::timeout) << "waits for the lease";
  stop.request_stop();
  RunResult<void> r = result.get();
  ASSERT_TRUE(r.skipped());
  EXPECT_EQ(r.skip_reason(), SkipReason::cancelled);
  EXPECT_FALSE(ran);
  holder.reset();
  EXPECT_TRUE(is_free(*store_, lock));
}

TEST_P(FuturesTest, StopDuringTheActionFiresItsStopTokenAndIsNotAFailure) {
  const std::string lock = unique_lock("fut-stop-action");
  LeaderElector elector(store_, no_wait());
  std::stop_source stop;
  std::atomic<bool> started{false};
  auto result = run_if_leader_result_async(
      elector, lock,
      [&](LeaderContext& ctx) {
        started = true;
        while (!ctx.stop_token().stop_requested()) std::this_thread::sleep_for(1ms);
        throw OperationCancelled();
      },
      stop.get_token());
  while (!started) std::this_thread::sleep_for(1ms);
  stop.request_stop();
  RunResult<void> r = result.get();
  ASSERT_TRUE(r.skipped());
  EXPECT_EQ(r.skip_reason(), SkipReason::cancelled);
  EXPECT_TRUE(is_free(*store_, lock));
}

TEST_P(FuturesTest, ExecutorDispatchRunsTheActionOnTheExecutorAndStoreIoElsewhere) {
  const std::string lock = unique_lock("on");
  ::asio::io_context io;
  auto work = ::asio::make_work_guard(io);
  std::thread loop([&] { io.run(); });
  store_->forbid(loop.get_id());
  LeaderElector elector(store_, no_wait());
  std::thread::id ran_on;
  auto value = run_if_leader_on(io.get_executor(), elector, lock, [&](LeaderContext& ctx) {
    ran_on = std::this_thread::get_id();
    return ctx.fencing_token();
  });
  auto token = value.get();
  ASSERT_TRUE(token.has_value());
  EXPECT_GT(*token, 0u);
  EXPECT_EQ(ran_on, loop.get_id());
  RunResult<void> failed = run_if_leader_result_on(io.get_executor(), elector, lock, [] {
                             throw std::logic_error("x");
                           }).get();
  EXPECT_TRUE(failed.failed());
  work.reset();
  loop.join();
  EXPECT_EQ(store_->violations(), 0) << "a store call ran on the executor's thread";
  EXPECT_TRUE(is_free(*store_, lock));
}

TEST_P(FuturesTest, ExecutorDispatchAcceptsAnyCallableExecutor) {
  const std::string lock = unique_lock("on-callable");
  std::atomic<int> dispatched{0};
  auto inline_executor = [&](std::function<void()> f) {
    ++dispatched;
    f();
  };
  GroupOptions g;
  g.election.wait_time = Duration{0};
  g.max_leaders = 2;
  LeaderGroupElector group(store_, g);
  auto slot =
      run_if_leader_on(inline_executor, group, lock, [](LeaderContext& ctx) { return ctx.slot(); });
  auto got = slot.get();
  ASSERT_TRUE(got.has_value());
  EXPECT_GE(*got, 0);
  EXPECT_LT(*got, 2);
  EXPECT_EQ(dispatched.load(), 1);
}

TEST_P(FuturesTest, ManyConcurrentFuturesKeepOneHolderPerLock) {
  const std::string lock = unique_lock("fut-many");
  LeaderElector elector(store_, no_wait());
  std::atomic<int> active{0}, overlaps{0};
  std::vector<std::future<bool>> runs;
  for (int i = 0; i < 200; ++i) {
    runs.push_back(run_if_leader_async(elector, lock, [&] {
      if (++active > 1) ++overlaps;
      std::this_thread::sleep_for(100us);
      --active;
    }));
  }
  int elected = 0;
  for (auto& f : runs) elected += f.get() ? 1 : 0;
  EXPECT_GE(elected, 1);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_TRUE(is_free(*store_, lock));
}

LEADER_ASIO_STORES(FuturesTest);

TEST(BlockingPool, RunsQueuedTasksBeyondItsThreadLimit) {
  std::atomic<int> ran{0};
  {
    BlockingPool pool(2);
    for (int i = 0; i < 100; ++i) pool.post([&] { ++ran; });
  }  // the destructor runs what is queued, then joins
  EXPECT_EQ(ran.load(), 100);
}

}  // namespace
}  // namespace leader::asio_test
