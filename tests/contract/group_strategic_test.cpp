// Contract cases 15 (group leases) and 18 (strategic election).

#include <atomic>
#include <set>

#include "helpers.hpp"

namespace leader::contract {
namespace {

GroupOptions group(const Backend& b, int max_leaders) {
  return GroupOptions{.election = {.wait_time = Ms{0},
                                   .lease_time = b.lease_unit * 10,
                                   .node_id = test::unique_name("group-node")},
                      .max_leaders = max_leaders};
}

TEST_P(ContractTest, GroupAdmitsMaxLeadersEachWithItsOwnSlotAndSkipsOneMore) {
  auto name = lock();
  std::vector<Acquisition> held;
  std::set<int> slots;
  for (int i = 0; i < 3; ++i) {
    LeaderGroupElector g(backend().open(), group(backend(), 3));
    held.push_back(g.acquire(name));
    ASSERT_TRUE(held.back()) << i;
    slots.insert(held.back().guard->context().slot());
  }
  EXPECT_EQ(slots, (std::set<int>{0, 1, 2}));
  LeaderGroupElector extra(backend().open(), group(backend(), 3));
  EXPECT_FALSE(extra.run_if_leader(name, [] {}));
  auto state = extra.inspect_group(name);
  EXPECT_EQ(state.active, 3);
  EXPECT_EQ(state.available, 0);
  int freed = held[1].guard->context().slot();
  held[1].guard->release();
  auto slot = extra.run_if_leader(name, [](LeaderContext& c) { return c.slot(); });
  EXPECT_EQ(slot, freed);
  EXPECT_EQ(extra.inspect_group(name).available, 1);
}

TEST_P(ContractTest, GroupWithOneSlotBehavesAsASingleLeader) {
  auto name = lock();
  LeaderGroupElector a(store(), group(backend(), 1));
  LeaderGroupElector b(backend().open(), group(backend(), 1));
  auto held = a.acquire(name);
  ASSERT_TRUE(held);
  EXPECT_EQ(held.guard->context().slot(), 0);
  EXPECT_FALSE(b.run_if_leader(name, [] {}));
  held.guard->release();
  EXPECT_TRUE(b.run_if_leader(name, [] {}));
}

TEST_P(ContractTest, GroupNeverExceedsMaxLeadersUnderConcurrency) {
  auto name = lock();
  constexpr int kThreads = 6;
  std::atomic<int> inside{0};
  std::atomic<int> peak{0};
  std::atomic<int> runs{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      LeaderGroupElector g(backend().open(), group(backend(), 2));
      auto hold = [&] {
        int now = ++inside;
        int p = peak.load();
        while (now > p && !peak.compare_exchange_weak(p, now)) {
        }
        std::this_thread::sleep_for(Ms{15});
        --inside;
        ++runs;
      };
      for (int i = 0; i < 8; ++i) {
        try {
          g.run_if_leader(name, hold);
        } catch (const BackendError&) {  // a slow store is not an extra holder
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(peak.load(), 2);
  EXPECT_GT(runs.load(), 0);
}

StrategicElector strategic(const Backend& b, std::shared_ptr<LeaseStore> s, const std::string& grp,
                           const std::string& node, std::shared_ptr<ElectionStrategy> strategy,
                           Ms ttl) {
  StrategicOptions o;
  o.candidate_ttl = ttl;
  o.election.node_id = node;
  o.election.lease_time = b.lease_unit * 5;
  return StrategicElector(std::move(s), grp, std::move(strategy), o);
}

TEST_P(ContractTest, StrategicFifoPicksTheEarliestCandidateAndOnlyItRuns) {
  auto grp = lock("-grp");
  auto job = lock("-job");
  auto ttl = backend().lease_unit * 20;
  auto a = strategic(backend(), store(), grp, "a-node", strategies::fifo(), ttl);
  auto b = strategic(backend(), backend().open(), grp, "b-node", strategies::fifo(), ttl);
  a.register_candidate();
  std::this_thread::sleep_for(Ms{20});
  b.register_candidate();
  EXPECT_EQ(b.pick(), "a-node");
  EXPECT_FALSE(b.run_if_leader(job, [] {}));
  EXPECT_TRUE(a.run_if_leader(job, [] {}));
  // Registration time is kept on refresh: a stays first.
  a.register_candidate();
  EXPECT_EQ(b.pick(), "a-node");
  auto listed = a.candidates();
  ASSERT_EQ(listed.size(), 2u);
  for (const auto& c : listed)
    if (c.node_id == "a-node") {
      EXPECT_EQ(c.successes, 1u);
    }
}

TEST_P(ContractTest, StrategicSeededRandomAgreesAcrossReplicasWithTheSameSeed) {
  auto grp = lock("-grp");
  auto ttl = backend().lease_unit * 20;
  std::vector<std::unique_ptr<StrategicElector>> replicas;
  for (const char* n : {"n1", "n2", "n3", "n4"}) {
    StrategicOptions o;
    o.candidate_ttl = ttl;
    o.election.node_id = n;
    o.election.lease_time = backend().lease_unit * 5;
    replicas.push_back(
        std::make_unique<StrategicElector>(backend().open(), grp, strategies::random(1234), o));
    replicas.back()->register_candidate();
  }
  auto first = replicas[0]->pick();
  ASSERT_TRUE(first.has_value());
  for (std::size_t i = 1; i < replicas.size(); ++i) EXPECT_EQ(replicas[i]->pick(), first);
  int ran = 0;
  auto job = lock("-job");
  for (auto& r : replicas) ran += r->run_if_leader(job, [] {}) ? 1 : 0;
  EXPECT_EQ(ran, 1) << "exactly the picked replica runs";
}

TEST_P(ContractTest, StrategicScoredAndWeightedPickTheExpectedWinner) {
  auto grp = lock("-grp");
  auto s = store();
  auto deadline = [] { return Deadline::after(Ms{5000}); };
  auto now = std::chrono::system_clock::now();
  Candidate good{"good", {}, 9, 1, now - std::chrono::minutes(30), {}};
  Candidate bad{"bad", {}, 1, 9, now - std::chrono::seconds(1), {}};
  s->put_candidate(grp, good, backend().lease_unit * 20, deadline());
  s->put_candidate(grp, bad, backend().lease_unit * 20, deadline());
  auto listed = s->list_candidates(grp, deadline());
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(strategies::scored(scorers::success_rate())->pick(listed, now), "good");
  EXPECT_EQ(strategies::scored(scorers::recent_success())->pick(listed, now), "bad");
  EXPECT_EQ(strategies::scored(scorers::idle_time())->pick(listed, now), "good");
  auto w = scorers::weighted({{0.1, scorers::success_rate()}, {5.0, scorers::recent_success()}});
  EXPECT_EQ(strategies::scored(w)->pick(listed, now), "bad");
}

TEST_P(ContractTest, StrategicCandidatesExpireAfterTheirTtl) {
  auto grp = lock("-grp");
  auto s = store();
  s->put_candidate(grp, Candidate{"short", {}, 0, 0, {}, {{"zone", "a"}}}, backend().lease_unit,
                   Deadline::after(Ms{5000}));
  s->put_candidate(grp, Candidate{"long", {}, 0, 0, {}, {}}, backend().lease_unit * 20,
                   Deadline::after(Ms{5000}));
  auto listed = s->list_candidates(grp, Deadline::after(Ms{5000}));
  ASSERT_EQ(listed.size(), 2u);
  for (const auto& c : listed)
    if (c.node_id == "short") {
      EXPECT_EQ(c.metadata.at("zone"), "a");
    }
  ASSERT_TRUE(
      eventually([&] { return s->list_candidates(grp, Deadline::after(Ms{5000})).size() == 1; },
                 backend().lease_unit * 4));
  EXPECT_EQ(s->list_candidates(grp, Deadline::after(Ms{5000}))[0].node_id, "long");
  s->remove_candidate(grp, "long", Deadline::after(Ms{5000}));
  s->remove_candidate(grp, "absent", Deadline::after(Ms{5000}));
  EXPECT_TRUE(s->list_candidates(grp, Deadline::after(Ms{5000})).empty());
}

}  // namespace
}  // namespace leader::contract

LEADER_CONTRACT_CASE_FILE(group_strategic)
