// etcd-reconciler: a controller-style reconcile loop that runs only while this replica leads.
// Replicas campaign (wait_time); the leader holds its lease with auto_extend and reconciles
// until its stop_token fires: on a lost lease (here: the process was paused past its lease and
// another replica took over) it stops at once, before the server expires its lease, and
// campaigns again. Every reconcile pass is stamped with the fencing token of its term.
//
//   example_etcd_reconciler <etcd-uri> <replica> [--lock NAME] [--lease-ms N] [--pass-ms N]
//
// SIGTERM or SIGINT shuts it down: the loop ends, the lease is released. A store error (outage,
// timeout) is reported on stderr and the replica campaigns again.
//
// Output (one line per event; the test driver greps them):
//   LEADING replica=<r> token=<t>             this replica was elected
//   RECONCILE replica=<r> token=<t> pass=<n>  one reconcile pass under that term
//   STOPPED replica=<r> token=<t> reason=<lost|shutdown>   the loop ended
#include <atomic>
#include <chrono>
#include <csignal>
#include <leader/leader.hpp>
#include <thread>

namespace {
std::atomic<bool> shutdown_requested{false};  // lock-free: safe to set from a signal handler
void on_signal(int /*signal*/) { shutdown_requested = true; }
}  // namespace

#include "../common.hpp"

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  const char* usage = "<etcd-uri> <replica> [--lock NAME] [--lease-ms N] [--pass-ms N]";
  return example::run(argc, argv, usage, [](const example::Args& args) {
    const std::string& replica = args.at(1);
    const std::string lock = args.get("--lock", "reconciler");
    const auto pass_every = std::chrono::milliseconds(args.number("--pass-ms", 100));
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);
    leader::LeaderElector elector(
        leader::open(args.at(0)),
        {.wait_time = 200ms,  // campaign in short rounds so that shutdown is checked
         .lease_time = std::chrono::milliseconds(args.number("--lease-ms", 1000)),
         .auto_extend = true,
         .node_id = replica});
    while (!shutdown_requested) {
      try {
        elector.run_if_leader(lock, [&](leader::LeaderContext& ctx) {
          const auto token = static_cast<unsigned long long>(ctx.fencing_token());
          std::printf("LEADING replica=%s token=%llu\n", replica.c_str(), token);
          for (long pass = 1;; ++pass) {
            // still_leader() is false once the lease is lost or its local deadline passed.
            if (ctx.stop_token().stop_requested() || !ctx.still_leader()) {
              std::printf("STOPPED replica=%s token=%llu reason=lost\n", replica.c_str(), token);
              return;
            }
            if (shutdown_requested) {
              std::printf("STOPPED replica=%s token=%llu reason=shutdown\n", replica.c_str(),
                          token);
              return;
            }
            std::printf("RECONCILE replica=%s token=%llu pass=%ld\n", replica.c_str(), token, pass);
            std::this_thread::sleep_for(pass_every);  // compare desired and actual state, act
          }
        });
      } catch (const leader::BackendError& e) {
        // The store failed (outage, timeout): say so and campaign again; a controller keeps going.
        std::fprintf(stderr, "replica %s: store error, retrying: %s\n", replica.c_str(), e.what());
        std::this_thread::sleep_for(200ms);
      }
    }
    return 0;
  });
}
