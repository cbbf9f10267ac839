// Strategic election: three aggregator replicas register as candidates of one group, each with
// the free CPU it has; a scored strategy picks the best live candidate and only that one runs the
// job (the lock still guarantees one runner if replicas briefly disagree). When the winner leaves
// the group, the next best is picked.
//   example_strategic [/tmp/app-leader-strategic.db]
#include <cstdio>
#include <cstdlib>
#include <leader/leader.hpp>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  auto store = leader::open(std::string("sqlite://") +
                            (argc > 1 ? argv[1] : "/tmp/app-leader-strategic.db"));
  // Score = 0.8 x the free CPU a candidate registered + 0.2 x its success rate (0.5 before any
  // run).
  leader::Scorer free_cpu = [](const leader::Candidate& c, leader::WallTime) {
    auto it = c.metadata.find("free_cpu");
    return it == c.metadata.end() ? 0.0 : std::atof(it->second.c_str());
  };
  leader::Scorer score =
      leader::scorers::weighted({{0.8, free_cpu}, {0.2, leader::scorers::success_rate()}});
  auto strategy = leader::strategies::scored(score, "free-cpu");

  std::vector<leader::StrategicElector> replicas;  // in production: one per process or host
  const std::pair<const char*, const char*> registered[] = {
      {"aggregator-1", "0.20"}, {"aggregator-2", "0.85"}, {"aggregator-3", "0.50"}};
  for (auto [node, cpu] : registered) {
    leader::StrategicOptions options;
    options.candidate_ttl = 30s;
    options.election.node_id = node;
    options.metadata = {{"free_cpu", cpu}};
    replicas.emplace_back(store, "tenant-aggregation", strategy, options);
    replicas.back().register_candidate();
  }
  for (const auto& c : replicas.front().candidates()) {
    std::printf("candidate %s free_cpu=%s score=%.2f\n", c.node_id.c_str(),
                c.metadata.at("free_cpu").c_str(), score(c, leader::WallTime::clock::now()));
  }

  auto round = [&](int n) {
    for (auto& replica : replicas) {
      bool ran = replica.run_if_leader("daily-aggregation", [&](leader::LeaderContext& ctx) {
        std::printf("round %d: %s runs the aggregation (fencing token %llu)\n", n,
                    replica.node_id().c_str(),
                    static_cast<unsigned long long>(ctx.fencing_token()));
      });
      if (!ran) {
        std::printf("round %d: %s not picked (the strategy picks %s)\n", n,
                    replica.node_id().c_str(), replica.pick().value_or("nobody").c_str());
      }
    }
  };
  round(1);
  replicas[1].unregister_candidate();  // aggregator-2 shuts down
  replicas.erase(replicas.begin() + 1);
  std::printf("aggregator-2 left the group\n");
  round(2);
  for (auto& replica : replicas) replica.unregister_candidate();
  return 0;
}
