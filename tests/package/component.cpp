// A consumer of one installed component: `consumer <component> store|library [db]` checks that
// linking a store alone registered its URI schemes (the static registration was not dropped) and
// that other components register none, and for the stores that need no server, opens one and
// wins an election; the metrics consumer also reads a series back from Metrics::serialize().
#include <cstdio>
#include <leader/leader.hpp>
#include <string>
#include <vector>
#ifdef LEADER_TEST_ASIO
#include <leader/asio/async_elector.hpp>
#endif
#ifdef LEADER_TEST_METRICS
#include <leader/metrics.hpp>
#endif

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  const std::string component = argc > 1 ? argv[1] : "core";
  const std::vector<std::string> schemes = leader::registered_schemes();
  std::printf("%s: schemes", component.c_str());
  for (const std::string& s : schemes) std::printf(" %s", s.c_str());
  std::printf("\n");
  const bool is_store = argc > 2 && std::string(argv[2]) == "store";
  if (schemes.empty() == is_store) return 1;  // a store registers schemes; core and asio none
#ifdef LEADER_TEST_METRICS
  {  // the metrics component: a series fed through a bus comes out of serialize()
    leader::EventBus bus;
    leader::metrics::Metrics metrics;
    auto feed = metrics.attach(bus);
    bus.publish({.kind = leader::EventKind::elected, .lock = "package"});
    if (!feed.wait_idle(5s)) return 1;
    if (metrics.serialize().find("leader_elections_total{lock=\"package\"") == std::string::npos)
      return 1;
  }
#endif
  std::string uri;
  if (component == "memory") uri = "memory:";
  if (component == "sqlite") uri = "sqlite://" + (argc > 3 ? std::string(argv[3]) : "/tmp/c.db");
  if (uri.empty()) return 0;
  leader::LeaderElector elector(leader::open(uri),
                                leader::ElectionOptions{.wait_time = 0s, .lease_time = 30s});
  return elector.run_if_leader("package", [] {}) ? 0 : 1;
}
