// Uses the installed headers and libraries the way an application does.
#include <cstdio>
#include <leader/leader.hpp>
#include <string>

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  std::string path = argc > 1 ? argv[1] : "/tmp/leader-consumer.db";
  auto store = leader::open("sqlite://" + path);
  leader::LeaderElector elector(store, leader::ElectionOptions{.wait_time = 0s, .lease_time = 30s});
  std::optional<int> r =
      elector.run_if_leader("nightly", [](leader::LeaderContext&) { return 42; });
  bool ran = elector.run_if_leader("cleanup", [] {});
  leader::RunResult<int> rr =
      elector.run_if_leader_result("daily", [](leader::LeaderContext&) { return 1; });
  leader::LeaderGroupElector group(store, leader::GroupOptions{.max_leaders = 3});
  auto slot = group.run_if_leader("warmup", [](leader::LeaderContext& c) { return c.slot(); });
  auto mem = leader::open("memory:");
  bool mem_ran = leader::LeaderElector(mem).run_if_leader("x", [] {});
  std::printf("nightly=%d cleanup=%d daily=%d slot=%d memory=%d\n", r.value_or(-1), ran,
              rr.elected() ? rr.value() : -1, slot.value_or(-1), mem_ran);
  return (r == 42 && ran && rr.elected() && slot && mem_ran) ? 0 : 1;
}
