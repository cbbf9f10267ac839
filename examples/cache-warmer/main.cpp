// cache-warmer: N replicas of a service start together; a group election of `partitions` slots
// lets up to that many warm the cache in parallel, each on the partition of the slot it holds.
// min_lease_time keeps each slot held for the whole warm-up round even after its replica is
// done, so a late replica cannot take a finished slot and warm that partition a second time.
//
//   example_cache_warmer <store-uri> <replica> <cache-dir> [--lock NAME] [--partitions N]
//                        [--round-ms N] [--warm-ms N]
//
// Output (one line per event; the test driver greps them):
//   WARMED partition=<slot> replica=<r> token=<t>   this replica warmed that partition
//   BUSY replica=<r>                                every partition is taken this round
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <leader/leader.hpp>
#include <string>
#include <thread>

#include "../common.hpp"

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  const char* usage =
      "<store-uri> <replica> <cache-dir> [--lock NAME] [--partitions N] [--round-ms N] "
      "[--warm-ms N]";
  return example::run(argc, argv, usage, [](const example::Args& args) {
    const std::string& replica = args.at(1);
    const std::filesystem::path cache_dir = args.at(2);
    const std::string lock = args.get("--lock", "cache-warmup");
    const int partitions = static_cast<int>(args.number("--partitions", 3));
    const auto round = std::chrono::milliseconds(args.number("--round-ms", 5000));
    const auto warm = std::chrono::milliseconds(args.number("--warm-ms", 300));
    leader::LeaderGroupElector group(leader::open(args.at(0)),
                                     {.election = {.wait_time = 0s,
                                                   .lease_time = 2 * round,
                                                   // The slot stays taken for the round, also
                                                   // after warm-up.
                                                   .min_lease_time = round,
                                                   .node_id = replica},
                                      .max_leaders = partitions});
    bool warmed = group.run_if_leader(lock, [&](leader::LeaderContext& ctx) {
      // The slot number is the partition this replica owns for the round.
      const int partition = ctx.slot();
      std::this_thread::sleep_for(warm);  // load from the database
      std::filesystem::create_directories(cache_dir);
      std::ofstream(cache_dir / ("partition-" + std::to_string(partition)))
          << replica << ' ' << ctx.fencing_token() << '\n';
      std::printf("WARMED partition=%d replica=%s token=%llu\n", partition, replica.c_str(),
                  static_cast<unsigned long long>(ctx.fencing_token()));
    });
    if (!warmed) std::printf("BUSY replica=%s\n", replica.c_str());
    return 0;
  });
}
