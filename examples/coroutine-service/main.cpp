// coroutine-service: a service built on asio coroutines (leader::asio) in which several
// coroutine workers, in this process and in other replicas, contend for one job's lease on Redis.
// The winner runs a coroutine job (timer steps; it would consume a queue); the others wait for the
// lease. SIGTERM cancels every worker through asio's cancellation (the `||` operator): a waiting
// worker gives up without acquiring anything, and the running job's pending operation is
// aborted and its lease released at once, so another replica can take over without waiting for
// the lease to expire.
//
//   example_coroutine_service <redis-uri> <replica> [--lock NAME] [--workers N] [--probe]
//
// Output (one line per event; the test driver greps them):
//   LEADING worker=<replica>/<w> token=<t>   this worker got the lease and runs the job
//   STEP worker=<replica>/<w> n=<i>          one step of the job
//   RELEASED worker=<replica>/<w>            cancelled on shutdown while running: lease released
//   GAVE-UP worker=<replica>/<w>             cancelled on shutdown while waiting for the lease
//   FREE / BUSY replica=<r>                  --probe: the lock was free (and taken once) or held
#include <asio.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <chrono>
#include <csignal>
#include <leader/asio/async_elector.hpp>
#include <leader/leader.hpp>

#include "../common.hpp"

namespace {

using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;
using Async = leader::asio::AsyncElector<leader::LeaderElector>;

// Completes when `stop` is cancelled (shutdown).
asio::awaitable<void> shutdown_requested(asio::steady_timer& stop) {
  try {
    co_await stop.async_wait(asio::use_awaitable);
  } catch (const std::system_error&) {
    // operation_aborted: the shutdown signal
  }
}

asio::awaitable<void> worker(Async& async, const std::string& lock, asio::steady_timer& stop,
                             std::string name) {
  bool leading = false;
  auto job = [&](leader::LeaderContext& ctx) -> asio::awaitable<void> {
    leading = true;
    std::printf("LEADING worker=%s token=%llu\n", name.c_str(),
                static_cast<unsigned long long>(ctx.fencing_token()));
    asio::steady_timer step(co_await asio::this_coro::executor);
    for (long n = 1;; ++n) {  // aborted (operation_aborted) on cancellation or a lost lease
      step.expires_after(100ms);
      co_await step.async_wait(asio::use_awaitable);
      std::printf("STEP worker=%s n=%ld\n", name.c_str(), n);
    }
  };
  auto first = co_await (async.async_run_if_leader(lock, job, asio::use_awaitable) ||
                         shutdown_requested(stop));
  if (first.index() == 1) {
    std::printf("%s worker=%s\n", leading ? "RELEASED" : "GAVE-UP", name.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage = "<redis-uri> <replica> [--lock NAME] [--workers N] [--probe]";
  return example::run(argc, argv, usage, [](const example::Args& args) {
    const std::string& replica = args.at(1);
    const std::string lock = args.get("--lock", "order-consumer");
    auto store = leader::open(args.at(0));
    if (args.has("--probe")) {
      leader::LeaderElector probe(store, {.wait_time = 0s, .lease_time = 1s, .node_id = replica});
      std::printf("%s replica=%s\n", probe.run_if_leader(lock, [] {}) ? "FREE" : "BUSY",
                  replica.c_str());
      return 0;
    }
    asio::io_context io;
    asio::steady_timer stop(io, asio::steady_timer::time_point::max());
    asio::signal_set signals(io, SIGTERM, SIGINT);
    signals.async_wait([&](const std::error_code&, int) { stop.cancel(); });
    Async async(
        leader::LeaderElector(
            store, {.wait_time = 60s, .lease_time = 10s, .auto_extend = true, .node_id = replica}),
        io.get_executor());
    const long workers = args.number("--workers", 3);
    for (long w = 1; w <= workers; ++w) {
      asio::co_spawn(io, worker(async, lock, stop, replica + "/" + std::to_string(w)),
                     asio::detached);
    }
    io.run();
    return 0;
  });
}
