// redisson-watchdog: Redisson's lock watchdog, done with auto_extend. A job that runs longer than
// its lease keeps the lease alive: auto_extend renews it at a third of the granted ttl while the
// job runs, so another replica stays excluded for the whole job. When the store goes away (Redis
// killed), renewals fail, the job's stop_token fires at the local deadline, before the server
// could have expired the lease, and the job aborts instead of running unprotected.
//
//   example_redisson_watchdog <redis-uri> <replica> [--lock NAME] [--lease-ms N] [--steps N]
//                             [--step-ms N] [--probe]
//
// --probe tries the lock once and reports whether it is held (no job).
// Output (one line per event; the test driver greps them):
//   ACQUIRED replica=<r> token=<t> lease_ms=<n>   the job starts
//   STEP replica=<r> n=<i>                        step i of the job is done
//   DONE replica=<r> steps=<n>                    the job finished under its lease (exit 0)
//   ABORTED replica=<r> after_step=<i>            the lease was lost: stopped (exit 3)
//   BUSY replica=<r> / FREE replica=<r>           --probe: another replica holds it / it was free
#include <chrono>
#include <leader/leader.hpp>
#include <thread>

#include "../common.hpp"

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  const char* usage =
      "<redis-uri> <replica> [--lock NAME] [--lease-ms N] [--steps N] [--step-ms N] [--probe]";
  return example::run(argc, argv, usage, [](const example::Args& args) {
    const std::string& replica = args.at(1);
    const std::string lock = args.get("--lock", "long-job");
    const auto lease = std::chrono::milliseconds(args.number("--lease-ms", 1000));
    const long steps = args.number("--steps", 8);
    const auto step = std::chrono::milliseconds(args.number("--step-ms", 250));
    leader::LeaderElector elector(leader::open(args.at(0)), {.wait_time = 0s,
                                                             .lease_time = lease,
                                                             .auto_extend = !args.has("--probe"),
                                                             .node_id = replica});
    if (args.has("--probe")) {
      bool got = elector.run_if_leader(lock, [](leader::LeaderContext&) {});
      std::printf("%s replica=%s\n", got ? "FREE" : "BUSY", replica.c_str());
      return 0;
    }
    long done = 0;
    bool aborted = false;
    try {
      elector.run_if_leader(lock, [&](leader::LeaderContext& ctx) {
        std::printf("ACQUIRED replica=%s token=%llu lease_ms=%lld\n", replica.c_str(),
                    static_cast<unsigned long long>(ctx.fencing_token()),
                    static_cast<long long>(lease.count()));
        const auto stop = ctx.stop_token();
        for (long i = 1; i <= steps; ++i) {
          // One step of the job, in slices so that a lost lease stops it promptly.
          for (auto t = 0ms; t < step; t += 10ms) {
            if (stop.stop_requested()) {
              aborted = true;
              return;
            }
            std::this_thread::sleep_for(10ms);
          }
          done = i;
          std::printf("STEP replica=%s n=%ld\n", replica.c_str(), i);
        }
      });
    } catch (const leader::BackendError& e) {
      // Releasing a lease on a store that is gone fails too; the job had already stopped.
      if (!aborted) throw;
      std::fprintf(stderr, "release failed (expected, the store is gone): %s\n", e.what());
    }
    if (aborted) {
      std::printf("ABORTED replica=%s after_step=%ld\n", replica.c_str(), done);
      return 3;
    }
    std::printf("DONE replica=%s steps=%ld\n", replica.c_str(), done);
    return 0;
  });
}
