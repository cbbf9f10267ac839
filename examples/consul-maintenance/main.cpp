// consul-maintenance: a maintenance job (a database vacuum, a cache purge) that must not run on
// two nodes at once, gated by a Consul lock: a session with a TTL and a KV key acquired with it,
// the layout `consul lock` uses. Every node tries when its timer fires; one runs the job, the
// others skip and report who holds it (inspect()). min_lease_time keeps the lock for the whole
// maintenance window after the job, so a node whose timer fires late does not run it again.
//
//   example_consul_maintenance <consul-uri> <replica> [--lock NAME] [--window-ms N]
//                              [--work-ms N]
//
// Output (one line per event; the test driver greps them):
//   MAINTAINED replica=<r> token=<t>     this node ran the maintenance
//   SKIPPED replica=<r> holder=<node>    another node holds the maintenance lock
#include <chrono>
#include <leader/leader.hpp>
#include <thread>

#include "../common.hpp"

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  const char* usage = "<consul-uri> <replica> [--lock NAME] [--window-ms N] [--work-ms N]";
  return example::run(argc, argv, usage, [](const example::Args& args) {
    const std::string& replica = args.at(1);
    const std::string lock = args.get("--lock", "maintenance-vacuum");
    const auto window = std::chrono::milliseconds(args.number("--window-ms", 3000));
    leader::LeaderElector elector(
        leader::open(args.at(0)),
        {.wait_time = 0s, .lease_time = 2 * window, .min_lease_time = window, .node_id = replica});
    bool ran = elector.run_if_leader(lock, [&](leader::LeaderContext& ctx) {
      std::this_thread::sleep_for(std::chrono::milliseconds(args.number("--work-ms", 300)));
      std::printf("MAINTAINED replica=%s token=%llu\n", replica.c_str(),
                  static_cast<unsigned long long>(ctx.fencing_token()));
    });
    if (!ran) {
      const auto state = elector.inspect(lock);
      std::printf("SKIPPED replica=%s holder=%s\n", replica.c_str(),
                  state.held() ? state.holders.front().node_id.c_str() : "-");
    }
    return 0;
  });
}
