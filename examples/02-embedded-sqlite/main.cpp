// Run a nightly job exactly once across replicas on one host, with the embedded SQLite store.
//   example_embedded-sqlite [/tmp/app-leader.db]
#include <cstdio>
#include <leader/leader.hpp>

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  auto store = leader::open(std::string("sqlite://") + (argc > 1 ? argv[1] : "/tmp/app-leader.db"));
  leader::LeaderElector elector(store, {.wait_time = 0s, .lease_time = 30s, .auto_extend = true});

  auto result = elector.run_if_leader_result("nightly-settlement", [](leader::LeaderContext& ctx) {
    // Pass the fencing token to the resource you write to; stop when the lease is lost.
    std::printf("settling with fencing token %llu\n",
                static_cast<unsigned long long>(ctx.fencing_token()));
    return ctx.stop_token().stop_requested() ? 0 : 17;
  });
  switch (result.kind()) {
    case leader::RunResult<int>::Kind::elected:
      std::printf("settled %d accounts\n", result.value());
      break;
    case leader::RunResult<int>::Kind::skipped:
      std::printf("skipped: %s\n", std::string(leader::to_string(result.skip_reason())).c_str());
      break;
    case leader::RunResult<int>::Kind::action_failed:
      std::printf("the job failed\n");
      return 1;
  }
  auto state = elector.inspect("nightly-settlement");
  std::printf("lock is %s\n", state.held() ? "held" : "free");
  return 0;
}
