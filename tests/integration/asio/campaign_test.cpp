// leader::asio::async_campaign on the memory store: the campaign leads on a pool thread (never on
// the event loop), cancellation stops it and releases the lease, and an error that ends run()
// completes the operation with it.

#include "leader/asio/campaign.hpp"

#include <asio.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <atomic>
#include <thread>

#include "support.hpp"

namespace leader::asio_test {
namespace {

using ::asio::awaitable;
using ::asio::use_awaitable;
using namespace std::chrono_literals;
using namespace ::asio::experimental::awaitable_operators;

ElectionOptions campaigning() {
  return {.wait_time = 0s, .lease_time = 600ms, .auto_extend = true};
}

TEST(AsyncCampaign, LeadsOffTheEventLoopUntilCancelledAndReleasesTheLease) {
  auto store = make_memory_store();
  ::asio::io_context io;
  const auto loop_thread = std::this_thread::get_id();
  std::atomic<int> started{0};
  std::atomic<bool> on_loop{false};
  CampaignCallbacks cb;
  cb.on_started_leading = [&](LeaderContext&) {
    on_loop = on_loop || std::this_thread::get_id() == loop_thread;
    ++started;
  };
  Campaign campaign(LeaderElector(store, campaigning()), "svc", cb, {.retry_period = 20ms});
  bool completed = false;
  ::asio::co_spawn(
      io,
      [&]() -> awaitable<void> {
        ::asio::steady_timer t(co_await ::asio::this_coro::executor, 400ms);
        co_await (leader::asio::async_campaign(campaign, use_awaitable) ||
                  t.async_wait(use_awaitable));
        completed = true;
      },
      [](const std::exception_ptr& e) {
        if (e) std::rethrow_exception(e);
      });
  io.run();
  EXPECT_TRUE(completed);
  EXPECT_EQ(started.load(), 1);
  EXPECT_FALSE(on_loop.load()) << "on_started_leading ran on the event loop";
  EXPECT_FALSE(campaign.is_leader());
  EXPECT_FALSE(store->inspect("svc", Deadline::after(1s)).held()) << "cancel did not release";
}

TEST(AsyncCampaign, CompletesWithTheErrorThatEndedTheCampaign) {
  auto store = make_memory_store();
  ::asio::io_context io;
  CampaignCallbacks cb;
  cb.on_started_leading = [](LeaderContext&) { throw std::runtime_error("boom"); };
  Campaign campaign(LeaderElector(store, campaigning()), "svc", cb, {.retry_period = 20ms});
  std::exception_ptr error;
  // A plain callback's associated executor is the system executor: bind it to the loop so that
  // io.run() waits for the completion.
  leader::asio::async_campaign(
      campaign, ::asio::bind_executor(io, [&](std::exception_ptr e) { error = std::move(e); }));
  io.run();
  ASSERT_TRUE(error);
  EXPECT_THROW(std::rethrow_exception(error), std::runtime_error);
}

}  // namespace
}  // namespace leader::asio_test
