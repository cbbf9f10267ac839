// Coroutines with leader::asio: eight workers on one io_context thread try the same job; one runs
// it (a coroutine action that stops when its lease is lost), the others are skipped, and a
// second job is abandoned by a timeout while it waits for a busy lock.
#include <asio.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <cstdio>
#include <leader/asio/async_elector.hpp>
#include <leader/leader.hpp>

using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;

asio::awaitable<int> settle(leader::LeaderContext& ctx) {
  asio::steady_timer step(co_await asio::this_coro::executor);
  for (int batch = 0; batch < 3; ++batch) {  // cancelled (operation_aborted) if the lease is lost
    step.expires_after(20ms);
    co_await step.async_wait(asio::use_awaitable);
    std::printf("  batch %d written with fencing token %llu\n", batch,
                static_cast<unsigned long long>(ctx.fencing_token()));
  }
  co_return 3;
}

asio::awaitable<void> worker(leader::asio::AsyncElector<leader::LeaderElector>& async, int id) {
  std::optional<int> batches =
      co_await async.async_run_if_leader("nightly", settle, asio::use_awaitable);
  if (batches) {
    std::printf("worker %d settled %d batches\n", id, *batches);
  } else {
    std::printf("worker %d: another worker holds the lease\n", id);
  }
}

asio::awaitable<void> impatient(leader::asio::AsyncElector<leader::LeaderElector>& patient) {
  asio::steady_timer timeout(co_await asio::this_coro::executor, 50ms);
  auto first = co_await (patient.async_run_if_leader(
                             "reindex", [] {}, asio::use_awaitable) ||
                         timeout.async_wait(asio::use_awaitable));
  std::printf("reindex %s\n",
              first.index() == 1 ? "abandoned after 50 ms: nothing acquired" : "ran");
}

int main() {
  asio::io_context io;  // one thread; the store is only called from leader's BlockingPool
  auto store = leader::open("memory:example");
  leader::asio::AsyncElector async(
      leader::LeaderElector(store, {.wait_time = 0s, .lease_time = 10s}), io.get_executor());
  for (int id = 0; id < 8; ++id) asio::co_spawn(io, worker(async, id), asio::detached);

  leader::LeaderElector holder(store, {.wait_time = 0s, .lease_time = 10s});
  auto busy = holder.acquire("reindex");  // someone else holds "reindex" meanwhile
  leader::asio::AsyncElector patient(
      leader::LeaderElector(store, {.wait_time = 30s, .lease_time = 10s}), io.get_executor());
  asio::co_spawn(io, impatient(patient), asio::detached);
  io.run();
  return 0;
}
