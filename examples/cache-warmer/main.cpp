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

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s <store-uri> <replica> <cache-dir> [--lock NAME] [--partitions N] "
                 "[--round-ms N] [--warm-ms N]\n",
                 argv[0]);
    return 2;
  }
  const std::string uri = argv[1];
  const std::string replica = argv[2];
  const std::filesystem::path cache_dir = argv[3];
  std::string lock = "cache-warmup";
  int partitions = 3;
  long round_ms = 5000;
  long warm_ms = 300;
  for (int i = 4; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--lock" && i + 1 < argc) {
      lock = argv[++i];
    } else if (a == "--partitions" && i + 1 < argc) {
      partitions = std::atoi(argv[++i]);
    } else if (a == "--round-ms" && i + 1 < argc) {
      round_ms = std::atol(argv[++i]);
    } else if (a == "--warm-ms" && i + 1 < argc) {
      warm_ms = std::atol(argv[++i]);
    } else {
      std::fprintf(stderr, "unknown argument: %s\n", a.c_str());
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    leader::LeaderGroupElector group(
        leader::open(uri), {.wait_time = 0s,
                            .lease_time = std::chrono::milliseconds(2 * round_ms),
                            // The slot stays taken for the round, also after warm-up ends.
                            .min_lease_time = std::chrono::milliseconds(round_ms),
                            .node_id = replica,
                            .max_leaders = partitions});
    bool warmed = group.run_if_leader(lock, [&](leader::LeaderContext& ctx) {
      // The slot number is the partition this replica owns for the round.
      const int partition = ctx.slot();
      std::this_thread::sleep_for(std::chrono::milliseconds(warm_ms));  // load from the database
      std::filesystem::create_directories(cache_dir);
      std::ofstream(cache_dir / ("partition-" + std::to_string(partition)))
          << replica << ' ' << ctx.fencing_token() << '\n';
      std::printf("WARMED partition=%d replica=%s token=%llu\n", partition, replica.c_str(),
                  static_cast<unsigned long long>(ctx.fencing_token()));
    });
    if (!warmed) std::printf("BUSY replica=%s\n", replica.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "replica %s: %s\n", replica.c_str(), e.what());
    return 1;
  }
}
