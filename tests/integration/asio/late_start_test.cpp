// Asynchronous dispatch and the lease's lifetime (issue 37, defects 5 and 11):
// - an action whose executor is busy until the lease was lost never starts, judged by a second
//   client that the store granted the lock to in the meantime (futures, leader::asio plain and
//   coroutine actions);
// - nothing of an operation is left on a library thread once it completed: the caller may
//   destroy its execution context, elector and action as soon as the result is in.

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <thread>

#include "leader/asio/async_elector.hpp"
#include "leader/async.hpp"
#include "support.hpp"

namespace leader::asio_test {
namespace {

using namespace std::chrono_literals;

/// A second client's view: retries a no-wait acquire until the store grants the lock (the lease
/// of the first holder has expired on the server), for at most `within`.
std::optional<LeaseGuard> judge_takes_over(const std::shared_ptr<LeaseStore>& store,
                                           const std::string& lock, Duration within) {
  ElectionOptions o = no_wait(std::chrono::seconds(30));
  o.node_id = "judge";
  LeaderElector judge(store, o);
  const auto until = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < until) {
    Acquisition acq = judge.acquire(lock);
    if (acq) return std::move(*acq.guard);
    std::this_thread::sleep_for(20ms);
  }
  return std::nullopt;
}

/// `store` after one call with a generous deadline, so that its first connection (seen past
/// 600 ms on a loaded 2-core machine) is open before the short lease's call timeouts count.
std::shared_ptr<LeaseStore> warmed(std::shared_ptr<LeaseStore> store) {
  try {
    (void)store->inspect("asio-warm-up", Deadline::after(5s));
  } catch (const BackendError&) {  // shows up again in the case itself
  }
  return store;
}

/// Blocks the only thread of `pool` until `open` is set.
void occupy(::asio::thread_pool& pool, std::shared_future<void> open) {
  ::asio::post(pool, [open] { open.wait(); });
}

class LateStartTest : public ::testing::TestWithParam<StoreCase> {
 protected:
  void SetUp() override {
    store_ = warmed(GetParam().open());
    // The memory store is in-process: the judge must share the instance; every other store gets
    // its own connection.
    judge_store_ = GetParam().name == "memory" ? store_ : warmed(GetParam().open());
  }
  /// The holder: no auto_extend, a short lease, so the lease is lost while the executor is busy.
  LeaderElector holder() {
    ElectionOptions o = no_wait(GetParam().short_lease);
    o.node_id = "holder";
    return LeaderElector(store_, o);
  }
  /// Runs `start` (which dispatches an action to `pool` and returns the run's future) while the
  /// pool is busy, lets a judge take the lock once the server expired the holder's lease, then
  /// frees the pool: the action must not start, and the result says lease_lost. A run whose
  /// holder never got the lock (its short call timeouts missed on a loaded machine) is not a
  /// verdict: it is tried again on a fresh lock, up to 3 times.
  template <class Start>
  void expect_not_started(Start start) {
    std::string why;
    for (int run = 1; run <= 3; ++run) {
      if (judged_run(start, why)) return;
      if (::testing::Test::HasFatalFailure()) return;
    }
    FAIL() << "the holder never held the lock in 3 runs; the last: " << why;
  }
  /// One run of expect_not_started; false (with `why`) when the holder never held the lock.
  template <class Start>
  bool judged_run(Start& start, std::string& why) {
    const std::string lock = unique_lock("late");
    ::asio::thread_pool pool(1);
    std::promise<void> gate;
    occupy(pool, gate.get_future().share());
    std::atomic<bool> ran{false};
    auto future = start(pool, lock, ran);
    // The judge starts once the server shows the holder's lease (else it may simply win the race).
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (!judge_store_->inspect(lock, Deadline::after(2s)).held()) {
      if (future.wait_for(0s) == std::future_status::ready) {
        try {
          auto r = future.get();
          why = r.skipped() ? "skipped: " + std::string(to_string(r.skip_reason())) : "ran";
        } catch (const std::exception& e) {
          why = e.what();
        }
        return false;
      }
      if (std::chrono::steady_clock::now() >= until) {
        why = "not held within 20 s";
        return false;
      }
      std::this_thread::sleep_for(5ms);
    }
    auto judged = judge_takes_over(judge_store_, lock, 20 * GetParam().short_lease + 10s);
    EXPECT_TRUE(judged) << "the judge never got the lock: the holder's lease did not expire";
    gate.set_value();
    if (!judged) return true;
    EXPECT_EQ(future.wait_for(30s), std::future_status::ready);
    RunResult<void> result = future.get();
    EXPECT_FALSE(ran) << "the action started while the judge held the lock (token "
                      << judged->info().fencing_token << ")";
    EXPECT_TRUE(result.skipped());
    if (result.skipped()) {
      EXPECT_EQ(result.skip_reason(), SkipReason::lease_lost);
    }
    judged->release();
    pool.join();
    return true;
  }
  std::shared_ptr<LeaseStore> store_;
  std::shared_ptr<LeaseStore> judge_store_;
};

TEST_P(LateStartTest, FuturesActionQueuedPastItsLeaseNeverStarts) {
  expect_not_started(
      [&](::asio::thread_pool& pool, const std::string& lock, std::atomic<bool>& ran) {
        return run_if_leader_result_on(pool.get_executor(), holder(), lock,
                                       [&](LeaderContext&) { ran = true; });
      });
}

TEST_P(LateStartTest, AsioActionQueuedPastItsLeaseNeverStarts) {
  expect_not_started(
      [&](::asio::thread_pool& pool, const std::string& lock, std::atomic<bool>& ran) {
        return asio::async_run_if_leader_result(
            pool.get_executor(), holder(), lock, [&](LeaderContext&) { ran = true; },
            ::asio::use_future);
      });
}

TEST_P(LateStartTest, AsioCoroutineQueuedPastItsLeaseNeverStarts) {
  expect_not_started(
      [&](::asio::thread_pool& pool, const std::string& lock, std::atomic<bool>& ran) {
        return asio::async_run_if_leader_result(
            pool.get_executor(), holder(), lock,
            [&](LeaderContext&) -> ::asio::awaitable<void> {
              ran = true;
              co_return;
            },
            ::asio::use_future);
      });
}

LEADER_ASIO_STORES(LateStartTest);

/// An elector that counts its live copies; a copy destroyed off the test's thread takes a while,
/// so a copy still owned by a library thread after completion is seen, not raced past.
class CountedElector {
 public:
  CountedElector(LeaderElector inner, std::thread::id test_thread)
      : inner_(std::move(inner)),
        live_(std::make_shared<std::atomic<int>>(1)),
        test_thread_(test_thread) {}
  CountedElector(const CountedElector& o)
      : inner_(o.inner_), live_(o.live_), test_thread_(o.test_thread_) {
    ++*live_;
  }
  CountedElector& operator=(const CountedElector&) = delete;
  ~CountedElector() {
    if (std::this_thread::get_id() != test_thread_) std::this_thread::sleep_for(300ms);
    --*live_;
  }
  Acquisition acquire(std::string_view lock, const std::stop_token& stop = {}) const {
    return inner_.acquire(lock, stop);
  }
  [[nodiscard]] int live() const { return live_->load(); }

 private:
  LeaderElector inner_;
  std::shared_ptr<std::atomic<int>> live_;
  std::thread::id test_thread_;
};

/// Runs three operations that `start(executor, elector, lock, action)` begins, each on a thread
/// pool destroyed as soon as its result is in: once complete, no library thread may still hold
/// the operation's elector copy or action (they could refer to what the caller destroys).
template <class Start>
void expect_nothing_kept_after_completion(Start start) {
  auto store = make_memory_store();
  CountedElector elector(LeaderElector(store, no_wait()), std::this_thread::get_id());
  for (int round = 0; round < 3; ++round) {
    std::optional<::asio::thread_pool> pool(std::in_place, 1);
    auto action_alive = std::make_shared<int>(0);
    std::weak_ptr<int> action_state = action_alive;
    auto future = start(pool->get_executor(), elector, unique_lock("lifetime"),
                        [held = std::move(action_alive)](LeaderContext&) { return *held; });
    ASSERT_TRUE(future.get().elected());
    EXPECT_EQ(elector.live(), 1) << "a library thread still holds the operation's elector copy";
    EXPECT_TRUE(action_state.expired()) << "a library thread still holds the action";
    pool.reset();  // the caller's context goes at once; nothing may touch it from now on
  }
  std::this_thread::sleep_for(400ms);  // a late drop on a library thread would happen by now
  EXPECT_EQ(elector.live(), 1);
}

TEST(OperationLifetimeTest, AsioOperationKeepsNothingOfTheCallerOnceComplete) {
  expect_nothing_kept_after_completion([](auto ex, const auto& elector, auto lock, auto action) {
    return asio::async_run_if_leader_result(ex, elector, lock, std::move(action),
                                            ::asio::use_future);
  });
}

TEST(OperationLifetimeTest, FuturesRunKeepsNothingOfTheCallerOnceComplete) {
  expect_nothing_kept_after_completion([](auto ex, const auto& elector, auto lock, auto action) {
    return run_if_leader_result_on(ex, elector, lock, std::move(action));
  });
}

}  // namespace
}  // namespace leader::asio_test
