// Asynchronous waiters (RedisStore's AsyncLane, README.md "Waiting without a thread") against a
// private redis-server that the tests pause and restart. The server is the judge: a waiter is
// granted only what the server gives, and the holder it replaces must have seen its stop signal
// before that grant.

#include <condition_variable>
#include <mutex>
#include <vector>

#include "leader/detail/capabilities.hpp"
#include "leader/detail/store_support.hpp"
#include "redis_store.hpp"
#include "redis_test_util.hpp"

namespace leader::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Grants of asynchronous acquisitions, collected as their callbacks run (the store's thread).
class Grants {
 public:
  Elector::AcquireDone callback() {
    return [this](Acquisition acq, std::exception_ptr error) {
      std::lock_guard lock(mu_);
      if (error) {
        ++errors_;
      } else if (acq) {
        times_.push_back(Clock::now());
        tokens_.push_back(acq.guard->info().fencing_token);
        held_.push_back(std::move(*acq.guard));
      } else {
        ++skips_;
      }
      cv_.notify_all();
    };
  }
  // Waits until `n` acquisitions ended (granted, skipped or failed).
  bool wait_ended(int n, Clock::duration limit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return ended_locked() >= n; });
  }
  bool wait_granted(std::size_t n, Clock::duration limit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return times_.size() >= n; });
  }
  // Releases, from this thread, every lease held now; returns how many there were.
  std::size_t release_held() {
    std::vector<LeaseGuard> held;
    {
      std::lock_guard lock(mu_);
      held.swap(held_);
    }
    const std::size_t n = held.size();
    held.clear();
    return n;
  }
  std::vector<Clock::time_point> times() {
    std::lock_guard lock(mu_);
    return times_;
  }
  std::vector<std::uint64_t> tokens() {
    std::lock_guard lock(mu_);
    return tokens_;
  }
  int skips() {
    std::lock_guard lock(mu_);
    return skips_;
  }
  int errors() {
    std::lock_guard lock(mu_);
    return errors_;
  }

 private:
  int ended_locked() const { return static_cast<int>(times_.size()) + skips_ + errors_; }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Clock::time_point> times_;
  std::vector<std::uint64_t> tokens_;
  std::vector<LeaseGuard> held_;
  int skips_ = 0;
  int errors_ = 0;
};

ElectionOptions options(Duration wait, Duration lease) {
  ElectionOptions o;
  o.wait_time = wait;
  o.lease_time = lease;
  return o;
}

TEST(RedisAsyncWaiters, APausedServerGivesTheLockToAWaiterOnlyAfterTheHolderWasStopped) {
  PrivateRedis server(private_port());
  const std::string lock = unique_lock("async-pause");
  LeaderElector holder(leader::open(server.uri("?command_timeout=300ms")), options(0s, 1s));
  auto held = holder.acquire(lock);
  ASSERT_TRUE(held);
  const std::uint64_t holder_token = held.guard->info().fencing_token;
  std::mutex mu;
  std::optional<Clock::time_point> holder_stopped;
  std::stop_callback on_stop(held.guard->context().stop_token(), [&] {
    std::lock_guard l(mu);
    holder_stopped = Clock::now();
  });
  constexpr int kWaiters = 10;
  LeaderElector waiter(leader::open(server.uri("?command_timeout=300ms")), options(20s, 5s));
  ASSERT_TRUE(waiter.acquires_async());
  Grants grants;
  for (int i = 0; i < kWaiters; ++i) waiter.acquire_async(lock, {}, grants.callback());
  std::this_thread::sleep_for(300ms);  // they all wait now
  server.pause();                      // the holder cannot renew; its key runs out on the server
  std::this_thread::sleep_for(2500ms);
  server.resume();
  ASSERT_TRUE(grants.wait_granted(1, 15s)) << "no waiter got the lock after the server resumed";
  {
    std::lock_guard l(mu);
    ASSERT_TRUE(holder_stopped.has_value()) << "a waiter was granted while the holder ran on";
    EXPECT_LT(*holder_stopped, grants.times().front());
  }
  EXPECT_GT(grants.tokens().front(), holder_token);
  // The others follow one at a time, each with a greater token.
  for (int served = 1; served < kWaiters; ++served) {
    EXPECT_EQ(grants.release_held(), 1u) << "two waiters held the lock at once";
    ASSERT_TRUE(grants.wait_granted(static_cast<std::size_t>(served) + 1, 15s));
  }
  EXPECT_EQ(grants.release_held(), 1u);
  const auto tokens = grants.tokens();
  EXPECT_TRUE(std::is_sorted(tokens.begin(), tokens.end()));
  EXPECT_EQ(std::adjacent_find(tokens.begin(), tokens.end()), tokens.end());
  EXPECT_EQ(grants.errors(), 0);
}

TEST(RedisAsyncWaiters, WaitersCarryOnOverAServerRestart) {
  // The lane's two connections break; the next attempt opens a new one, the subscriber
  // subscribes again (and wakes the waits, which may have missed a change meanwhile).
  PrivateRedis server(private_port());
  const std::string lock = unique_lock("async-restart");
  LeaderElector holder(leader::open(server.uri()), options(0s, 30s));
  auto held = holder.acquire(lock);
  ASSERT_TRUE(held);
  auto store = leader::open(server.uri());
  LeaderElector waiter(store, options(20s, 5s));
  Grants grants;
  constexpr int kWaiters = 5;
  for (int i = 0; i < kWaiters; ++i) waiter.acquire_async(lock, {}, grants.callback());
  std::this_thread::sleep_for(300ms);
  server.restart();  // no persistence: the holder's key is gone
  ASSERT_TRUE(grants.wait_granted(1, 15s)) << "no waiter got the lock after the restart";
  for (int served = 1; served < kWaiters; ++served) {
    EXPECT_EQ(grants.release_held(), 1u);
    ASSERT_TRUE(grants.wait_granted(static_cast<std::size_t>(served) + 1, 15s));
  }
  EXPECT_EQ(grants.release_held(), 1u);
  // Each waiter made a few attempts; they went out in shared round trips.
  auto& redis = dynamic_cast<detail::redis::RedisStore&>(detail::unchecked(*store));
  const auto stats = redis.async_stats();
  EXPECT_GE(stats.commands, static_cast<std::uint64_t>(kWaiters));
  EXPECT_EQ(stats.waits, 0u);
}

TEST(RedisAsyncWaiters, ClusterAndWaitReplicasStoresWaitTheBlockingWay) {
  // ?wait_replicas= needs WAIT after each grant on the same connection: not on the lane.
  auto store = leader::open(redis_uri() + "?wait_replicas=1");
  auto* async = store->capabilities().async;
  ASSERT_NE(async, nullptr);
  EXPECT_FALSE(async->attempts_async());
  EXPECT_FALSE(LeaderElector(store, options(1s, 5s)).acquires_async());
}

}  // namespace
}  // namespace leader::test
