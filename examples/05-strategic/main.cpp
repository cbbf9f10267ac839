// Strategic election: the candidate with the best success rate runs the aggregation.
#include <cstdio>
#include <leader/leader.hpp>

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  auto store = leader::open(std::string("sqlite://") +
                            (argc > 1 ? argv[1] : "/tmp/app-leader-strategic.db"));
  auto strategy = leader::strategies::scored(leader::scorers::weighted(
      {{0.7, leader::scorers::success_rate()}, {0.3, leader::scorers::idle_time(10min)}}));
  leader::StrategicOptions options;
  options.candidate_ttl = 30s;
  options.election.node_id = "aggregator-1";
  options.metadata = {{"zone", "eu-west-1a"}};
  leader::StrategicElector elector(store, "tenant-aggregation", strategy, options);
  bool ran = elector.run_if_leader("daily-aggregation", [] { std::printf("aggregating\n"); });
  std::printf("%s; candidates registered: %zu\n", ran ? "ran" : "not picked",
              elector.candidates().size());
  return 0;
}
