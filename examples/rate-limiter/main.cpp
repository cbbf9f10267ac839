// rate-limiter: a cluster-wide concurrency limit. Every replica has jobs that call a rate-limited
// partner API; at most `--limit N` calls may run at once across all replicas. A
// LeaderGroupElector with max_leaders = N is the limit: a job runs only while it holds one of the
// N slots, and waits (wait_time, jittered backoff) for a slot to free up. Each running job marks
// itself in a shared directory (standing in for the partner, which would count connections), so
// the output shows how many ran at once.
//
//   example_rate_limiter <store-uri> <replica> <running-dir> [--lock NAME] [--limit N]
//                        [--jobs N] [--call-ms N]
//
// Output (one line per event; the test driver greps them):
//   CALL replica=<r> job=<j> slot=<s> active=<n>   a job holds slot s; n jobs were running then
//   DONE replica=<r> jobs=<n>                       every job of this replica ran
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <leader/leader.hpp>
#include <thread>

#include "../common.hpp"

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  const char* usage =
      "<store-uri> <replica> <running-dir> [--lock NAME] [--limit N] [--jobs N] [--call-ms N]";
  return example::run(argc, argv, usage, [](const example::Args& args) {
    const std::string& replica = args.at(1);
    const std::filesystem::path running = args.at(2);
    const long jobs = args.number("--jobs", 3);
    const auto call = std::chrono::milliseconds(args.number("--call-ms", 300));
    leader::LeaderGroupElector limiter(
        leader::open(args.at(0)),
        {.election = {.wait_time = 30s,  // a job waits this long for a slot before it gives up
                      .lease_time = 5s,
                      .node_id = replica},
         .max_leaders = static_cast<int>(args.number("--limit", 2))});
    std::filesystem::create_directories(running);
    const std::string lock = args.get("--lock", "partner-api");
    for (long job = 0; job < jobs; ++job) {
      bool ran = limiter.run_if_leader(lock, [&](leader::LeaderContext& ctx) {
        const auto mark = running / (replica + "-" + std::to_string(job));
        std::ofstream(mark) << ctx.slot() << '\n';
        const auto active = std::distance(std::filesystem::directory_iterator(running),
                                          std::filesystem::directory_iterator());
        std::printf("CALL replica=%s job=%ld slot=%d active=%ld\n", replica.c_str(), job,
                    ctx.slot(), static_cast<long>(active));
        std::this_thread::sleep_for(call);  // the partner API call
        std::filesystem::remove(mark);
      });
      if (!ran) throw std::runtime_error("no slot free within 30 s");
    }
    std::printf("DONE replica=%s jobs=%ld\n", replica.c_str(), jobs);
    return 0;
  });
}
