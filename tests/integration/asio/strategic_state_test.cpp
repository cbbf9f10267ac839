// leader::asio with the StrategicElector (AsyncElector<StrategicElector>), and awaiting a change
// of the leadership state (async_wait_state_change), on the memory store.

#include <asio.hpp>
#include <thread>

#include "leader/asio/async_elector.hpp"
#include "leader/asio/state_watch.hpp"
#include "support.hpp"

namespace leader::asio_test {
namespace {

using ::asio::awaitable;
using ::asio::use_awaitable;
using namespace std::chrono_literals;

TEST(AsioStrategic, ACoroutineRunsOnlyOnThePickedReplica) {
  auto store = make_memory_store();
  StrategicOptions o;
  o.election.node_id = "picked";
  o.election.lease_time = 10s;
  StrategicElector picked(store, "grp", strategies::fifo(), o);
  picked.register_candidate();
  std::this_thread::sleep_for(5ms);
  o.election.node_id = "other";
  StrategicElector other(store, "grp", strategies::fifo(), o);
  ::asio::io_context io;
  leader::asio::AsyncElector<StrategicElector> a(picked, io.get_executor());
  leader::asio::AsyncElector<StrategicElector> b(other, io.get_executor());
  std::optional<int> ran_a;
  bool ran_b = true;
  ::asio::co_spawn(
      io,
      [&]() -> awaitable<void> {
        ran_a = co_await a.async_run_if_leader(
            "job", []() -> awaitable<int> { co_return 4; }, use_awaitable);
        ran_b = co_await b.async_run_if_leader(
            "job", [] {}, use_awaitable);
      },
      ::asio::detached);
  io.run();
  EXPECT_EQ(ran_a, std::optional<int>(4));
  EXPECT_FALSE(ran_b);
}

TEST(AsioStateWatch, AwaitsTheNextChangeOfALock) {
  auto store = make_memory_store();
  LeaderElector e(store, {.wait_time = 0s, .lease_time = 10s});
  auto bus = e.event_bus();
  ::asio::io_context io;
  std::vector<bool> seen;
  ::asio::co_spawn(
      io,
      [&]() -> awaitable<void> {
        std::uint64_t version = bus->state("job").version;
        for (int i = 0; i < 2; ++i) {
          auto s =
              co_await leader::asio::async_wait_state_change(bus, "job", version, use_awaitable);
          seen.push_back(s.held);
          version = s.version;
        }
      },
      ::asio::detached);
  std::thread driver([&] {
    std::this_thread::sleep_for(20ms);
    auto held = e.acquire("job");
    std::this_thread::sleep_for(20ms);
  });  // the guard is released as the lambda ends
  io.run();
  driver.join();
  EXPECT_EQ(seen, (std::vector<bool>{true, false}));
}

TEST(AsioStateWatch, CancellationCompletesWithOperationAborted) {
  auto bus = std::make_shared<EventBus>();
  ::asio::io_context io;
  ::asio::cancellation_signal cancel;
  std::error_code got;
  leader::asio::async_wait_state_change(
      bus, "never", 0,
      ::asio::bind_cancellation_slot(
          cancel.slot(),
          ::asio::bind_executor(io, [&](std::error_code ec, LeadershipState) { got = ec; })));
  ::asio::post(io, [&] { cancel.emit(::asio::cancellation_type::terminal); });
  io.run();
  EXPECT_EQ(got, ::asio::error::operation_aborted);
}

}  // namespace
}  // namespace leader::asio_test
