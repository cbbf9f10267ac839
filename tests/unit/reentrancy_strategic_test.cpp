// Opt-in reentrancy (a nested run_if_leader on a lock this thread holds) and the StrategicElector
// through the future and executor forms of async.hpp (memory store).

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "leader/async.hpp"
#include "leader/leader.hpp"
#include "leader/stores/memory.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;

ElectionOptions quick(bool reentrant) {
  return {.wait_time = 0s, .lease_time = 10s, .reentrant = reentrant};
}

TEST(Reentrancy, OffByDefaultANestedCallOnTheSameLockIsSkipped) {
  auto store = make_memory_store();
  LeaderElector e(store, quick(false));
  bool inner_ran = true;
  EXPECT_TRUE(e.run_if_leader("job", [&] { inner_ran = e.run_if_leader("job", [] {}); }));
  EXPECT_FALSE(inner_ran);
}

TEST(Reentrancy, WhenEnabledANestedCallRunsUnderTheOuterLease) {
  auto store = make_memory_store();
  LeaderElector e(store, quick(true));
  std::uint64_t outer_token = 0;
  std::optional<std::uint64_t> inner_token;
  int elected = 0;
  auto sub = e.events().subscribe([&](const ElectionEvent& ev) {
    if (ev.kind == EventKind::elected) ++elected;
  });
  EXPECT_TRUE(e.run_if_leader("job", [&](LeaderContext& outer) {
    outer_token = outer.fencing_token();
    inner_token =
        e.run_if_leader("job", [](LeaderContext& inner) { return inner.fencing_token(); });
    auto result = e.run_if_leader_result("job", [] { return 7; });
    EXPECT_TRUE(result.elected());
    EXPECT_EQ(result.value(), 7);
    EXPECT_EQ(result.lease()->fencing_token, outer.fencing_token());
    EXPECT_TRUE(e.run_if_leader("other", [] {}));  // another lock is acquired as usual
  }));
  ASSERT_TRUE(inner_token);
  EXPECT_EQ(*inner_token, outer_token);
  ASSERT_TRUE(sub.wait_idle(5s));
  EXPECT_EQ(elected, 2);  // job once, other once: the nested calls acquired nothing
  // The outer lease was released once: a new call acquires a new token.
  EXPECT_TRUE(
      e.run_if_leader("job", [&](LeaderContext& c) { EXPECT_GT(c.fencing_token(), outer_token); }));
}

TEST(Reentrancy, AppliesAcrossElectorsOfOneStoreAndPropagatesExceptions) {
  auto store = make_memory_store();
  LeaderElector outer(store, quick(false));
  LeaderElector inner(store, quick(true));
  EXPECT_TRUE(outer.run_if_leader("job", [&] {
    EXPECT_TRUE(inner.run_if_leader("job", [] {}));
    EXPECT_THROW(inner.run_if_leader("job", [] { throw std::runtime_error("inner"); }),
                 std::runtime_error);
    auto failed = inner.run_if_leader_result("job", [] { throw std::runtime_error("x"); });
    EXPECT_TRUE(failed.failed());
  }));
  // Another thread does not inherit the hold.
  EXPECT_TRUE(outer.run_if_leader("job", [&] {
    bool ran = true;
    std::thread([&] { ran = inner.run_if_leader("job", [] {}); }).join();
    EXPECT_FALSE(ran);
  }));
}

TEST(Reentrancy, WorksInsideAnAsyncAction) {
  auto store = make_memory_store();
  LeaderElector e(store, quick(true));
  auto f = run_if_leader_async(e, "job", [&] { return e.run_if_leader("job", [] { return 3; }); });
  auto out = f.get();
  ASSERT_TRUE(out && *out);
  EXPECT_EQ(**out, 3);
}

TEST(Reentrancy, GroupOptionsCarryTheFlag) {
  GroupOptions g{.election = {.reentrant = true}};
  EXPECT_TRUE(g.election.reentrant);
}

StrategicElector strategic(std::shared_ptr<LeaseStore> store, const std::string& node) {
  StrategicOptions o;
  o.election.node_id = node;
  o.election.lease_time = 10s;
  return StrategicElector(std::move(store), "grp", strategies::fifo(), o);
}

const Candidate* find(const std::vector<Candidate>& all, const std::string& node) {
  for (const auto& c : all)
    if (c.node_id == node) return &c;
  return nullptr;
}

TEST(StrategicAsync, FutureAndExecutorFormsRunOnlyOnThePickedReplicaAndCount) {
  auto store = make_memory_store();
  auto first = strategic(store, "first");
  first.register_candidate();
  std::this_thread::sleep_for(5ms);
  auto second = strategic(store, "second");
  EXPECT_FALSE(run_if_leader_async(second, "job", [] {}).get());
  auto result = run_if_leader_result_async(second, "job", [] { return 1; }).get();
  ASSERT_TRUE(result.skipped());
  EXPECT_EQ(result.skip_reason(), SkipReason::contention);

  EXPECT_TRUE(run_if_leader_async(first, "job", [] {}).get());
  BlockingPool executor_pool(2);
  auto on = run_if_leader_on([&](auto fn) { executor_pool.post(std::move(fn)); }, first, "job",
                             [] { return 5; });
  EXPECT_EQ(on.get(), std::optional<int>(5));
  auto failed = run_if_leader_result_async(first, "job", [] { throw std::runtime_error("no"); });
  EXPECT_TRUE(failed.get().failed());
  const auto all = first.candidates();
  const Candidate* me = find(all, "first");
  ASSERT_NE(me, nullptr);
  EXPECT_EQ(me->successes, 2u);
  EXPECT_EQ(me->failures, 1u);
}

TEST(StrategicAsync, PublishesCandidateEventsOnItsBus) {
  auto store = make_memory_store();
  auto only = strategic(store, "only");
  std::mutex mu;
  std::vector<std::string> kinds;
  auto sub = only.events().subscribe([&](const ElectionEvent& e) {
    std::lock_guard l(mu);
    kinds.push_back(std::string(to_string(e.kind)) + (e.detail.empty() ? "" : " " + e.detail));
  });
  EXPECT_TRUE(only.run_if_leader("job", [] {}));
  only.unregister_candidate();
  ASSERT_TRUE(sub.wait_idle(5s));
  std::lock_guard l(mu);
  std::vector<std::string> expected{
      "candidate_registered only",  "candidate_picked only", "elected", "released",
      "candidate_registered only",  // the counts re-sent
      "candidate_unregistered only"};
  EXPECT_EQ(kinds, expected);
}

}  // namespace
}  // namespace leader
