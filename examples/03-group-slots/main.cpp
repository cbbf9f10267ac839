// Up to three replicas warm caches at once, each on its own partition (slot).
#include <cstdio>
#include <leader/leader.hpp>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  std::string path = argc > 1 ? argv[1] : "/tmp/app-leader-group.db";
  std::vector<std::thread> replicas;
  for (int r = 0; r < 5; ++r) {
    replicas.emplace_back([&, r] {
      leader::LeaderGroupElector group(leader::open("sqlite://" + path),
                                       {.election = {.wait_time = 0s,
                                                     .lease_time = 10s,
                                                     .node_id = "replica-" + std::to_string(r)},
                                        .max_leaders = 3});
      bool ran = group.run_if_leader("cache-warmup", [&](leader::LeaderContext& ctx) {
        std::printf("replica-%d warms partition %d\n", r, ctx.slot());
        std::this_thread::sleep_for(200ms);
      });
      if (!ran) std::printf("replica-%d: all slots busy\n", r);
    });
  }
  for (auto& t : replicas) t.join();
  return 0;
}
