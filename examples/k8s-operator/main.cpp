// k8s-operator: the leader-election loop of a Kubernetes operator, on coordination.k8s.io/v1
// Lease objects written the way client-go's LeaseLock writes them (holderIdentity,
// leaseDurationSeconds, renewTime, leaseTransitions), so a Go operator using client-go's
// leaderelection on the same Lease name is excluded by this one and vice versa. Replicas
// campaign; the leader renews with auto_extend and reconciles until its stop_token fires; on
// SIGTERM (a rolling update) it releases the Lease (holderIdentity "") so a standby takes over at
// once instead of after leaseDurationSeconds.
//
//   example_k8s_operator <k8s-uri> <replica> [--lock NAME] [--lease-ms N] [--pass-ms N]
//
// Output (one line per event; the test driver greps them):
//   LEADING replica=<r> token=<t>            this replica was elected
//   RECONCILE replica=<r> token=<t> pass=<n> one pass of the operator's reconcile loop
//   STOPPED replica=<r> reason=<lost|shutdown>
#include <atomic>
#include <chrono>
#include <csignal>
#include <leader/leader.hpp>
#include <thread>

#include "../common.hpp"

namespace {
std::atomic<bool> shutdown_requested{false};  // lock-free: safe to set from a signal handler
void on_signal(int /*signal*/) { shutdown_requested = true; }
}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  const char* usage = "<k8s-uri> <replica> [--lock NAME] [--lease-ms N] [--pass-ms N]";
  return example::run(argc, argv, usage, [](const example::Args& args) {
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);
    const std::string& replica = args.at(1);
    const std::string lock = args.get("--lock", "example-operator");  // the Lease's name
    const auto pass_every = std::chrono::milliseconds(args.number("--pass-ms", 100));
    leader::LeaderElector elector(
        leader::open(args.at(0)),
        {.wait_time = 200ms,  // campaign in short rounds so that shutdown is checked
         .lease_time = std::chrono::milliseconds(args.number("--lease-ms", 3000)),
         .auto_extend = true,
         .node_id = replica});
    while (!shutdown_requested) {
      elector.run_if_leader(lock, [&](leader::LeaderContext& ctx) {
        const auto token = static_cast<unsigned long long>(ctx.fencing_token());
        std::printf("LEADING replica=%s token=%llu\n", replica.c_str(), token);
        for (long pass = 1; !shutdown_requested; ++pass) {
          if (ctx.stop_token().stop_requested()) {
            std::printf("STOPPED replica=%s reason=lost\n", replica.c_str());
            return;
          }
          std::printf("RECONCILE replica=%s token=%llu pass=%ld\n", replica.c_str(), token, pass);
          std::this_thread::sleep_for(pass_every);  // list/watch, compare, act
        }
        std::printf("STOPPED replica=%s reason=shutdown\n", replica.c_str());
      });  // returning releases the Lease
    }
    return 0;
  });
}
