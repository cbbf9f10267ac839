// Every door, judged: the judged scenarios run through each door of the library (doors.hpp: the
// blocking elector, futures, an executor of the caller's, leader::asio, Campaign, the C
// interface), on every backend and topology the contract runs on. The judge is a second client of
// the same backend, never the holder's arithmetic:
// - renewals fail: the holder's stop fires at least the margin before the server lets the judge
//   in (the blocking door has its own case in judged_test.cpp);
// - a release frees the lock at once: the judge's first attempt after the door returned is
//   granted;
// - an executor busy past the lease: the action never starts after the server gave the lock to
//   the judge, and the result says lease_lost.

#include <future>
#include <string>
#include <thread>
#include <utility>

#include "doors.hpp"
#include "judge.hpp"

namespace leader::contract {
namespace {

/// The door named `name`; skips the test when this build lacks it.
#define LEADER_DOOR_OR_SKIP(var, name) \
  const Door* var = find_door(name);   \
  if ((var) == nullptr) GTEST_SKIP() << "door " << (name) << " not built"

void door_stop_before_takeover(const Backend& b, const Door& door, const std::string& name) {
  const Ms lease = b.lease_unit;
  std::shared_ptr<test::FaultyStore> fs;
  const auto v = judged_conclusively(name, [&](const std::string& run_name) {
    fs = std::make_shared<test::FaultyStore>(b.open());
    auto o = renewing(b);
    auto verdict = judge(b, run_name,
                         {.store = fs,
                          .options = o,
                          .scenario = [&](LeaderContext&) { fs->fail_renew = true; },
                          .hold_limit = lease * 4,
                          .door = &door});
    return std::pair{verdict, required_gap(o, o.lease_time)};
  });
  EXPECT_TRUE(v.stop.has_value()) << "renewals failed for 4 leases without a stop signal ("
                                  << door.name << ")";
}

void door_release_frees_at_once(const Backend& b, const Door& door, const std::string& name) {
  LeaderElector holder(warmed(b.open()), renewing(b));  // a Campaign needs auto_extend
  std::uint64_t token = 0;
  auto result =
      door.run(holder, name, [&](LeaderContext& ctx) { token = ctx.fencing_token(); }, {});
  ASSERT_TRUE(result.elected()) << door.name << ": the holder was not elected on a free lock";
  // The judge: another client whose first attempt, right after the door returned, must be granted.
  LeaderElector second(warmed(b.open()), quick(b));
  Acquisition acq = second.acquire(name);
  ASSERT_TRUE(acq) << door.name << ": the lock was still held after the door returned ("
                   << acq.skipped.detail << ")";
  EXPECT_GT(acq.guard->info().fencing_token, token);
  acq.guard->release();
}

void door_never_starts_late(const Backend& b, const Door& door, const std::string& name) {
  auto judge_store = warmed(b.open());
  ElectionOptions o = quick(b);  // no auto_extend: the lease ends while the executor is busy
  LeaderElector holder(warmed(b.open()), o);
  std::promise<void> free_executor;
  std::shared_future<void> busy = free_executor.get_future().share();
  std::atomic<bool> ran{false};
  auto outcome = std::async(std::launch::async, [&] {
    return door.run(
        holder, name, [&](LeaderContext&) { ran = true; }, busy);
  });
  // Frees the executor on every way out (a failed assertion too), before `outcome` is waited for.
  struct FreeOnExit {
    std::promise<void>& p;
    bool freed = false;
    void now() {
      if (!std::exchange(freed, true)) p.set_value();
    }
    ~FreeOnExit() { now(); }
  } free_on_exit{free_executor};
  // The server is the judge: once it shows the holder's lease, a second client tries until the
  // server expired it and granted the lock to the judge.
  ASSERT_TRUE(
      eventually([&] { return judge_store->inspect(name, Deadline::after(Ms{2000})).held(); },
                 b.lease_unit * 5))
      << door.name << ": the holder never acquired";
  ElectionOptions jo = quick(b);
  jo.lease_time = b.lease_unit * 10;
  LeaderElector second(judge_store, jo);
  std::optional<LeaseGuard> judged;
  ASSERT_TRUE(eventually(
      [&] {
        Acquisition acq = second.acquire(name);
        if (acq) judged.emplace(std::move(*acq.guard));
        return judged.has_value();
      },
      b.lease_unit * 10))
      << door.name << ": the server never let the judge in";
  free_on_exit.now();
  ASSERT_EQ(outcome.wait_for(b.lease_unit * 10), std::future_status::ready);
  RunResult<void> result = outcome.get();
  EXPECT_FALSE(ran) << door.name << ": the action started while the judge held the lock (token "
                    << judged->info().fencing_token << ")";
  ASSERT_TRUE(result.skipped()) << door.name;
  EXPECT_EQ(result.skip_reason(), SkipReason::lease_lost) << door.name;
  judged->release();
}

// One test per door and scenario, so that ctest and the door x topology table name each.
#define LEADER_DOOR_CASES(Name, door_name)                                       \
  TEST_P(ContractTest, Door##Name##StopsTheHolderBeforeTheServerLetsAnotherIn) { \
    LEADER_DOOR_OR_SKIP(d, door_name);                                           \
    door_stop_before_takeover(backend(), *d, lock());                            \
  }                                                                              \
  TEST_P(ContractTest, Door##Name##ReleaseFreesTheLockAtOnce) {                  \
    LEADER_DOOR_OR_SKIP(d, door_name);                                           \
    door_release_frees_at_once(backend(), *d, lock());                           \
  }

LEADER_DOOR_CASES(Futures, "futures")
LEADER_DOOR_CASES(Executor, "executor")
LEADER_DOOR_CASES(Asio, "asio")
LEADER_DOOR_CASES(Campaign, "campaign")
LEADER_DOOR_CASES(C, "c")

TEST_P(ContractTest, DoorBlockingReleaseFreesTheLockAtOnce) {
  LEADER_DOOR_OR_SKIP(d, "blocking");
  door_release_frees_at_once(backend(), *d, lock());
}

TEST_P(ContractTest, DoorExecutorNeverStartsAnActionAfterTheLeaseWasLost) {
  LEADER_DOOR_OR_SKIP(d, "executor");
  door_never_starts_late(backend(), *d, lock());
}

TEST_P(ContractTest, DoorAsioNeverStartsAnActionAfterTheLeaseWasLost) {
  LEADER_DOOR_OR_SKIP(d, "asio");
  door_never_starts_late(backend(), *d, lock());
}

}  // namespace
}  // namespace leader::contract

LEADER_CONTRACT_CASE_FILE(door)
