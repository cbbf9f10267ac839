// Contract cases 1, 2, 4, 5, 6, 7, 10, 16, 19 (DESIGN.md section 4).

#include <atomic>
#include <optional>
#include <stdexcept>

#include "helpers.hpp"

namespace leader::contract {
namespace {

TEST_P(ContractTest, ElectedCallerRunsTheActionOnceAndGetsItsValue) {
  LeaderElector e(store(), quick(backend()));
  int calls = 0;
  std::optional<int> r = e.run_if_leader(lock(), [&](LeaderContext&) { return ++calls * 42; });
  EXPECT_EQ(r, 42);
  EXPECT_EQ(calls, 1);
  bool ran = e.run_if_leader(lock(), [&] { ++calls; });
  EXPECT_TRUE(ran);
  EXPECT_EQ(calls, 2);
  auto empty = e.run_if_leader(lock(), [] { return std::optional<int>{}; });
  ASSERT_TRUE(empty.has_value());
  EXPECT_FALSE(empty->has_value());
  auto text = e.run_if_leader(lock(), [] { return std::string(); });
  EXPECT_EQ(text, std::string());
}

TEST_P(ContractTest, HeldLockSkipsAtOnceWithWaitZeroWithoutActionOrException) {
  auto name = lock();
  LeaderElector holder(store(), quick(backend()));
  auto held = holder.acquire(name);
  ASSERT_TRUE(held);
  LeaderElector other(backend().open(), quick(backend()));
  bool called = false;
  auto t0 = SteadyClock::now();
  EXPECT_FALSE(other.run_if_leader(name, [&] { called = true; }));
  EXPECT_FALSE(called);
  EXPECT_LT(since(t0), Ms{2000});
}

TEST_P(ContractTest, WaitTimeWaitsUpToItAndThenSkips) {
  auto name = lock();
  auto o = quick(backend());
  o.lease_time = backend().lease_unit * 10;
  LeaderElector long_holder(store(), o);
  auto held = long_holder.acquire(name);
  ASSERT_TRUE(held);
  const Ms wait = backend().lease_unit / 2;
  LeaderElector waiter(backend().open(), quick(backend(), wait));
  auto t0 = SteadyClock::now();
  auto r = waiter.run_if_leader_result(name, [] { return 1; });
  auto took = since(t0);
  ASSERT_TRUE(r.skipped());
  EXPECT_EQ(r.skip_reason(), SkipReason::contention);
  EXPECT_GE(took, wait - Ms{5});
  EXPECT_LT(took, wait + waiter.options().effective_call_timeout() + Ms{1000});
}

TEST_P(ContractTest, WaiterAcquiresWhenTheHolderReleasesDuringTheWait) {
  auto name = lock();
  LeaderElector holder(store(), quick(backend()));
  auto held = holder.acquire(name);
  ASSERT_TRUE(held);
  std::thread releaser([&] {
    std::this_thread::sleep_for(backend().lease_unit / 4);
    held.guard->release();
  });
  LeaderElector waiter(backend().open(), quick(backend(), backend().lease_unit * 3));
  EXPECT_EQ(waiter.run_if_leader(name, [] { return 7; }), 7);
  releaser.join();
}

TEST_P(ContractTest, DifferentLockNamesAreIndependent) {
  LeaderElector a(store(), quick(backend()));
  LeaderElector b(backend().open(), quick(backend()));
  auto first = a.acquire(lock("-a"));
  ASSERT_TRUE(first);
  auto second = b.acquire(lock("-b"));
  EXPECT_TRUE(second);
}

TEST_P(ContractTest, NormalReturnReleasesAtOnce) {
  auto name = lock();
  auto o = quick(backend());
  o.lease_time = backend().lease_unit * 30;  // an unreleased lock would block the next call
  LeaderElector a(store(), o);
  LeaderElector b(backend().open(), o);
  EXPECT_TRUE(a.run_if_leader(name, [] {}));
  EXPECT_TRUE(b.run_if_leader(name, [] {}));
  EXPECT_FALSE(b.inspect(name).held());
}

TEST_P(ContractTest, ActionExceptionPropagatesUnchangedAndReleases) {
  auto name = lock();
  auto o = quick(backend());
  o.lease_time = backend().lease_unit * 30;
  LeaderElector e(store(), o);
  struct Boom : std::runtime_error {
    Boom() : std::runtime_error("boom") {}
  };
  EXPECT_THROW(e.run_if_leader(name, []() -> int { throw Boom(); }), Boom);
  LeaderElector other(backend().open(), o);
  EXPECT_TRUE(other.run_if_leader(name, [] {}));
}

TEST_P(ContractTest, RunIfLeaderResultReportsElectedSkippedAndActionFailedExactly) {
  auto name = lock();
  LeaderElector e(store(), quick(backend()));
  auto elected = e.run_if_leader_result(name, [](LeaderContext&) { return 5; });
  ASSERT_TRUE(elected.elected());
  EXPECT_EQ(elected.value(), 5);
  ASSERT_NE(elected.lease(), nullptr);
  EXPECT_EQ(elected.lease()->lock, name);
  EXPECT_GT(elected.lease()->fencing_token, 0u);

  auto failed = e.run_if_leader_result(name, []() -> int { throw std::logic_error("bad"); });
  ASSERT_TRUE(failed.failed());
  EXPECT_THROW(std::rethrow_exception(failed.error()), std::logic_error);

  auto held = e.acquire(name);
  ASSERT_TRUE(held);
  LeaderElector other(backend().open(), quick(backend()));
  auto skipped = other.run_if_leader_result(name, [] {});
  ASSERT_TRUE(skipped.skipped());
  EXPECT_EQ(skipped.skip_reason(), SkipReason::contention);
  EXPECT_EQ(skipped.lease(), nullptr);
}

TEST_P(ContractTest, ReleasingTwiceDoesNotThrow) {
  auto name = lock();
  LeaderElector e(store(), quick(backend()));
  auto held = e.acquire(name);
  ASSERT_TRUE(held);
  held.guard->release();
  EXPECT_NO_THROW(held.guard->release());
  EXPECT_FALSE(backend().open()->inspect(name, Deadline::after(Ms{5000})).held());
}

TEST_P(ContractTest, InspectShowsEmptyThenHolderWithExpiryAndTokenWithoutDisturbingIt) {
  auto name = lock();
  LeaderElector e(store(), quick(backend()));
  EXPECT_FALSE(e.inspect(name).held());
  auto held = e.acquire(name);
  ASSERT_TRUE(held);
  LeaderElector reader(backend().open(), quick(backend()));
  LockState s = reader.inspect(name);
  ASSERT_EQ(s.holders.size(), 1u);
  EXPECT_EQ(s.holders[0].node_id, e.options().node_id);
  EXPECT_EQ(s.holders[0].fencing_token, held.guard->info().fencing_token);
  EXPECT_GT(s.holders[0].expires_in, Ms{0});
  EXPECT_LE(s.holders[0].expires_in, backend().lease_unit + Ms{1000});
  EXPECT_TRUE(held.guard->context().extend(backend().lease_unit));
  EXPECT_TRUE(held.guard->context().still_leader());
}

TEST_P(ContractTest, CancellingWhileWaitingLeavesNothingAcquired) {
  auto name = lock();
  LeaderElector holder(store(), quick(backend()));
  auto held = holder.acquire(name);
  ASSERT_TRUE(held);
  std::stop_source cancel;
  LeaderElector waiter(backend().open(), quick(backend(), backend().lease_unit * 20));
  std::thread canceller([&] {
    std::this_thread::sleep_for(Ms{100});
    cancel.request_stop();
  });
  auto t0 = SteadyClock::now();
  auto r = waiter.run_if_leader_result(
      name, [] {}, cancel.get_token());
  canceller.join();
  ASSERT_TRUE(r.skipped());
  EXPECT_EQ(r.skip_reason(), SkipReason::cancelled);
  EXPECT_LT(since(t0), backend().lease_unit * 10);
  held.guard->release();
  EXPECT_FALSE(waiter.inspect(name).held());
}

TEST_P(ContractTest, CancellingTheActionStopsItReleasesAndIsNeverActionFailed) {
  auto name = lock();
  auto o = quick(backend());
  o.lease_time = backend().lease_unit * 30;
  LeaderElector e(store(), o);
  std::stop_source cancel;
  std::atomic<bool> saw_stop{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(Ms{100});
    cancel.request_stop();
  });
  auto r = e.run_if_leader_result(
      name,
      [&](LeaderContext& ctx) {
        while (!ctx.stop_token().stop_requested()) std::this_thread::sleep_for(Ms{5});
        saw_stop = true;
        throw OperationCancelled();
      },
      cancel.get_token());
  canceller.join();
  EXPECT_TRUE(saw_stop);
  ASSERT_TRUE(r.skipped());
  EXPECT_EQ(r.skip_reason(), SkipReason::cancelled);
  EXPECT_FALSE(e.inspect(name).held());
}

}  // namespace
}  // namespace leader::contract

LEADER_CONTRACT_CASE_FILE(basic)
