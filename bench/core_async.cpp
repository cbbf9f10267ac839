// The overhead of each execution model over the blocking run_if_leader, on the in-process memory
// store (one uncontended lock, wait_time 0): std::future, executor dispatch, and leader::asio with
// callbacks, use_future and use_awaitable (plain and coroutine actions).
//
//   build/bench/bench_core_async --benchmark_min_time=2

#include <benchmark/benchmark.h>

#include <asio.hpp>
#include <thread>

#include "leader/asio/async_elector.hpp"
#include "leader/async.hpp"
#include "leader/leader.hpp"
#include "leader/stores/memory.hpp"

namespace {

using namespace std::chrono_literals;

leader::LeaderElector bench_elector() {
  return leader::LeaderElector(leader::make_memory_store(), {.wait_time = 0s, .lease_time = 30s});
}

/// An io_context running on its own thread for the length of a benchmark.
struct BackgroundLoop {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(io);
  std::thread thread{[this] { io.run(); }};
  ~BackgroundLoop() {
    work.reset();
    thread.join();
  }
};

void BM_Blocking(benchmark::State& state) {
  auto e = bench_elector();
  for (auto _ : state) benchmark::DoNotOptimize(e.run_if_leader("bench", [] { return 1; }));
}
BENCHMARK(BM_Blocking);

void BM_Future(benchmark::State& state) {
  auto e = bench_elector();
  for (auto _ : state) {
    benchmark::DoNotOptimize(leader::run_if_leader_async(e, "bench", [] { return 1; }).get());
  }
}
BENCHMARK(BM_Future);

void BM_ExecutorDispatch(benchmark::State& state) {
  auto e = bench_elector();
  BackgroundLoop loop;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        leader::run_if_leader_on(loop.io.get_executor(), e, "bench", [] { return 1; }).get());
  }
}
BENCHMARK(BM_ExecutorDispatch);

void BM_AsioCallback(benchmark::State& state) {
  asio::io_context io;
  leader::asio::AsyncElector async(bench_elector(), io.get_executor());
  for (auto _ : state) {
    async.async_run_if_leader(
        "bench", [] { return 1; },
        [](const std::exception_ptr&, std::optional<int> v) { benchmark::DoNotOptimize(v); });
    io.run();
    io.restart();
  }
}
BENCHMARK(BM_AsioCallback);

void BM_AsioUseFuture(benchmark::State& state) {
  BackgroundLoop loop;
  leader::asio::AsyncElector async(bench_elector(), loop.io.get_executor());
  for (auto _ : state) {
    benchmark::DoNotOptimize(async
                                 .async_run_if_leader(
                                     "bench", [] { return 1; }, asio::use_future)
                                 .get());
  }
}
BENCHMARK(BM_AsioUseFuture);

void BM_AsioAwaitable(benchmark::State& state) {
  const bool coroutine_action = state.range(0) != 0;
  asio::io_context io;
  leader::asio::AsyncElector async(bench_elector(), io.get_executor());
  auto loop = [&]() -> asio::awaitable<void> {
    for (auto _ : state) {
      if (coroutine_action) {
        benchmark::DoNotOptimize(co_await async.async_run_if_leader(
            "bench", []() -> asio::awaitable<int> { co_return 1; }, asio::use_awaitable));
      } else {
        benchmark::DoNotOptimize(co_await async.async_run_if_leader(
            "bench", [] { return 1; }, asio::use_awaitable));
      }
    }
  };
  asio::co_spawn(io, loop(), asio::detached);
  io.run();
}
BENCHMARK(BM_AsioAwaitable)->Arg(0)->Arg(1)->ArgName("coroutine_action");

}  // namespace

BENCHMARK_MAIN();
