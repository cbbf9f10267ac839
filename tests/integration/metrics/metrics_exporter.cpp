// A small library process for the Prometheus test: two electors contend for one lock on a SQLite
// store (instrumented), both attached to one Metrics, whose serialize() is served over HTTP.
//   metrics_exporter <sqlite-uri> <port> [seconds]
// Serves http://127.0.0.1:<port>/metrics until SIGTERM/SIGINT or `seconds` (default 60) passed.

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "leader/leader.hpp"
#include "leader/metrics.hpp"

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int /*signal*/) { g_stop = true; }

}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  if (argc < 3) {
    std::fprintf(stderr, "usage: metrics_exporter <sqlite-uri> <port> [seconds]\n");
    return 64;
  }
  const std::string uri = argv[1];
  const int port = std::stoi(argv[2]);
  const auto run_for = std::chrono::seconds(argc > 3 ? std::stoi(argv[3]) : 60);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);

  leader::metrics::Metrics metrics;
  auto store = metrics.instrument(leader::open(uri));
  auto bus = std::make_shared<leader::EventBus>();
  const leader::ElectionOptions options{.wait_time = 0s, .lease_time = 5s, .auto_extend = true};
  leader::LeaderElector a(store, options, {.events = bus});
  leader::LeaderElector b(store, options, {.events = bus});
  auto subscription = metrics.attach(*bus);

  httplib::Server server;
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.serialize(), "text/plain; version=0.0.4; charset=utf-8");
  });
  if (!server.bind_to_port("127.0.0.1", port)) {
    std::fprintf(stderr, "metrics_exporter: cannot listen on 127.0.0.1:%d\n", port);
    return 69;
  }
  std::thread http([&] { server.listen_after_bind(); });

  // b tries while a holds the lock (a skip on contention), then a runs alone.
  const auto until = std::chrono::steady_clock::now() + run_for;
  while (!g_stop && std::chrono::steady_clock::now() < until) {
    (void)a.run_if_leader("metrics-it", [&] { (void)b.run_if_leader("metrics-it", [] {}); });
    std::this_thread::sleep_for(100ms);
  }
  server.stop();
  http.join();
  return 0;
}
