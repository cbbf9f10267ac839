// zookeeper-scheduler: jobs go to the least-loaded node. Every replica registers as a candidate
// of a StrategicElector with its current load in the registration's metadata; a scored strategy
// (score = 1 - load) picks the winner of each job from the live candidates, and only the pick
// tries the job's lock (which still guarantees one runner if replicas briefly disagree). A replica
// that leaves unregisters, so the next job goes to the next least-loaded node.
//
// Rounds are aligned on the wall clock (round k starts at --start-ms + k * --round-ms), as they
// would be for cron-driven jobs.
//
//   example_zookeeper_scheduler <zk-uri> <replica> --load X --start-ms T [--group NAME]
//                               [--jobs N] [--round-ms N] [--leave-after N]
//
// Output (one line per event; the test driver greps them):
//   RAN job=<k> replica=<r> load=<x> token=<t>   this replica was picked and ran job k
//   PASSED job=<k> replica=<r> picked=<node>     the strategy picked another node
//   LEFT replica=<r>                             unregistered (after --leave-after jobs; all)
#include <chrono>
#include <cstdlib>
#include <leader/leader.hpp>
#include <thread>

#include "../common.hpp"

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  const char* usage =
      "<zk-uri> <replica> [--load X] [--start-ms T] [--group NAME] [--jobs N] [--round-ms N] "
      "[--leave-after N]";
  return example::run(argc, argv, usage, [](const example::Args& args) {
    const std::string& replica = args.at(1);
    const std::string load = args.get("--load", "0.5");
    const std::string group = args.get("--group", "batch-workers");
    // Least loaded wins: the score is 1 - the load the candidate registered.
    auto least_loaded = leader::strategies::scored(
        [](const leader::Candidate& c, leader::WallTime) {
          auto it = c.metadata.find("load");
          return it == c.metadata.end() ? 0.0 : 1.0 - std::atof(it->second.c_str());
        },
        "least-loaded");
    leader::StrategicOptions options;
    options.candidate_ttl = 10s;
    options.election.node_id = replica;
    options.election.lease_time = 5s;
    options.metadata = {{"load", load}};
    leader::StrategicElector elector(leader::open(args.at(0)), group, least_loaded, options);
    elector.register_candidate();
    const long jobs = args.number("--jobs", 3);
    const long leave_after = args.number("--leave-after", jobs);
    const auto round = std::chrono::milliseconds(args.number("--round-ms", 500));
    const leader::WallTime start{std::chrono::milliseconds(args.number("--start-ms", 0))};
    for (long k = 1; k <= jobs; ++k) {
      std::this_thread::sleep_until(start + k * round);
      const std::string job = group + "-job-" + std::to_string(k);
      bool ran = elector.run_if_leader(job, [&](leader::LeaderContext& ctx) {
        std::printf("RAN job=%ld replica=%s load=%s token=%llu\n", k, replica.c_str(), load.c_str(),
                    static_cast<unsigned long long>(ctx.fencing_token()));
      });
      if (!ran) {
        std::printf("PASSED job=%ld replica=%s picked=%s\n", k, replica.c_str(),
                    elector.pick().value_or("-").c_str());
      }
      if (k == leave_after) {
        elector.unregister_candidate();  // e.g. on shutdown
        std::printf("LEFT replica=%s\n", replica.c_str());
        break;
      }
    }
    return 0;
  });
}
