// Up to three replicas warm caches at once, each on its own partition (slot). Five replicas try;
// a replica that gets a slot holds it until every replica has tried, so exactly two find all
// slots busy.
//   example_group-slots [/tmp/app-leader-group.db]
#include <cstdio>
#include <latch>
#include <leader/leader.hpp>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  std::string path = argc > 1 ? argv[1] : "/tmp/app-leader-group.db";
  constexpr int kReplicas = 5;
  std::latch tried(kReplicas);
  std::vector<std::thread> replicas;
  for (int r = 0; r < kReplicas; ++r) {
    replicas.emplace_back([&, r] {
      leader::LeaderGroupElector group(leader::open("sqlite://" + path),
                                       {.election = {.wait_time = 0s,
                                                     .lease_time = 10s,
                                                     .node_id = "replica-" + std::to_string(r)},
                                        .max_leaders = 3});
      bool ran = group.run_if_leader("cache-warmup", [&](leader::LeaderContext& ctx) {
        std::printf("replica-%d warms partition %d\n", r, ctx.slot());
        tried.arrive_and_wait();  // the warm-up itself; the slot is held meanwhile
      });
      if (!ran) {
        std::printf("replica-%d: all slots busy\n", r);
        tried.count_down();
      }
    });
  }
  for (auto& t : replicas) t.join();
  return 0;
}
