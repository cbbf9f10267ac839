// ElectionCore::acquire_async against a double of a store with asynchronous
// I/O (detail::AsyncAttempts): one worker thread runs the attempts (the scripted store's
// try_acquire, so hooks can fail or delay them) and the waits; a release counts as a change of
// the lock and wakes its waits. The same grants, skips and errors as the blocking acquire.

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <future>
#include <map>

#include "leader/detail/capabilities.hpp"
#include "leader/detail/store_support.hpp"
#include "scripted_store.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;
using testkit::ScriptedStore;

class AsyncDouble final : public ScriptedStore, public detail::AsyncAttempts {
 public:
  explicit AsyncDouble(std::shared_ptr<LeaseStore> inner) : ScriptedStore(std::move(inner)) {
    worker_ = std::thread([this] { work(); });
  }
  Capabilities capabilities() noexcept override { return {.async = this}; }
  ~AsyncDouble() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  [[nodiscard]] bool attempts_async() const noexcept override { return true; }
  void try_acquire_async(const LeaseRequest& r, Deadline d,
                         std::function<void(Attempt)> done) override {
    std::lock_guard lock(mu_);
    ++async_attempts_;
    jobs_.emplace_back([this, r, d, done = std::move(done)] {
      Attempt a;
      {
        std::lock_guard l(mu_);
        a.seen = changes_[r.lock];
      }
      try {
        a.acquired = try_acquire(r, d);
      } catch (...) {
        a.error = std::current_exception();
      }
      done(std::move(a));
    });
    cv_.notify_all();
  }
  // Every wait polls at `until` (no line): the elector's part is what these tests check.
  std::uint64_t wait_change(std::string_view lock, std::uint64_t seen, Deadline until,
                            Deadline /*last*/, std::uint64_t /*order*/,
                            std::function<void(bool)> woken) override {
    std::lock_guard l(mu_);
    const std::uint64_t id = ++next_id_;
    if (changes_[std::string(lock)] != seen) {
      jobs_.emplace_back([woken = std::move(woken)] { woken(true); });
    } else {
      waits_.emplace(id, Wait{std::string(lock), until, std::move(woken)});
    }
    cv_.notify_all();
    return id;
  }
  void cancel_wait(std::uint64_t id) noexcept override {
    std::lock_guard l(mu_);
    end_locked(id, false);
    cv_.notify_all();
  }
  LeaseStatus release(const Lease& lease, Duration keep_for, Deadline d) override {
    const LeaseStatus s = ScriptedStore::release(lease, keep_for, d);
    std::lock_guard l(mu_);
    ++changes_[lease.lock];
    std::vector<std::uint64_t> ids;
    for (const auto& [id, w] : waits_)
      if (w.lock == lease.lock) ids.push_back(id);
    for (std::uint64_t id : ids) end_locked(id, true);
    cv_.notify_all();
    return s;
  }

  int async_attempts() {
    std::lock_guard l(mu_);
    return async_attempts_;
  }
  std::thread::id worker_id() const { return worker_.get_id(); }

 private:
  struct Wait {
    std::string lock;
    Deadline until;
    std::function<void(bool)> woken;
  };
  void end_locked(std::uint64_t id, bool changed) {
    auto it = waits_.find(id);
    if (it == waits_.end()) return;
    jobs_.emplace_back([woken = std::move(it->second.woken), changed] { woken(changed); });
    waits_.erase(it);
  }
  void work() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      const auto now = std::chrono::steady_clock::now();
      auto until = now + 1h;
      std::vector<std::uint64_t> due;
      for (const auto& [id, w] : waits_) {
        if (w.until.at() <= now) {
          due.push_back(id);
        } else {
          until = std::min(until, w.until.at());
        }
      }
      for (std::uint64_t id : due) end_locked(id, false);
      if (jobs_.empty()) {
        cv_.wait_until(lock, until);
        continue;
      }
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      job = nullptr;
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::map<std::uint64_t, Wait> waits_;
  std::map<std::string, std::uint64_t> changes_;
  std::uint64_t next_id_ = 0;
  int async_attempts_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

struct Outcome {
  Acquisition acq;
  std::exception_ptr error;
  std::thread::id thread;
};

class AsyncAcquireTest : public ::testing::Test {
 protected:
  ElectionOptions options(Duration wait) {
    ElectionOptions o;
    o.wait_time = wait;
    o.lease_time = 10s;
    return o;
  }
  /// acquire_async, waiting (the test's thread) for its outcome.
  Outcome acquire(const LeaderElector& e, const std::string& lock, std::stop_token stop = {}) {
    std::promise<Outcome> p;
    e.acquire_async(lock, std::move(stop), [&p](Acquisition acq, std::exception_ptr error) {
      p.set_value(Outcome{std::move(acq), std::move(error), std::this_thread::get_id()});
    });
    return p.get_future().get();
  }
  // The last job of the double's worker may still hold an elector (and so the store): the
  // store must not be destroyed on that worker.
  void TearDown() override {
    EXPECT_TRUE(testkit::eventually([&] { return store_.use_count() == 1; }));
  }
  std::shared_ptr<LeaseStore> memory_ = make_memory_store();
  std::shared_ptr<AsyncDouble> store_ = std::make_shared<AsyncDouble>(memory_);
};

TEST_F(AsyncAcquireTest, AFreeLockIsGrantedOnTheStoresThreadWithItsFencingToken) {
  LeaderElector e(store_, options(1s));
  ASSERT_TRUE(e.acquires_async());
  Outcome o = acquire(e, "free");
  ASSERT_FALSE(o.error);
  ASSERT_TRUE(o.acq);
  EXPECT_EQ(o.thread, store_->worker_id());
  EXPECT_GT(o.acq.guard->info().fencing_token, 0u);
  EXPECT_TRUE(e.leadership("free").held);
  o.acq.guard->release();
  EXPECT_FALSE(memory_->inspect("free", Deadline::after(1s)).held());
}

TEST_F(AsyncAcquireTest, AWaiterIsWokenByTheReleaseAndGetsAGreaterToken) {
  LeaderElector holder(store_, options(0s));
  auto held = holder.acquire("handed");
  ASSERT_TRUE(held);
  const std::uint64_t first = held.guard->info().fencing_token;
  LeaderElector waiter(store_, options(30s));
  std::promise<Outcome> p;
  waiter.acquire_async("handed", {}, [&p](Acquisition acq, std::exception_ptr error) {
    p.set_value(Outcome{std::move(acq), std::move(error), std::this_thread::get_id()});
  });
  auto f = p.get_future();
  EXPECT_TRUE(testkit::eventually([&] { return store_->async_attempts() >= 1; }));
  EXPECT_EQ(f.wait_for(100ms), std::future_status::timeout) << "granted while held";
  held.guard->release();
  Outcome o = f.get();
  ASSERT_TRUE(o.acq);
  EXPECT_GT(o.acq.guard->info().fencing_token, first);
}

TEST_F(AsyncAcquireTest, TheWaitEndsWithTheStoresAnswerAsAContentionSkip) {
  LeaderElector holder(store_, options(0s));
  auto held = holder.acquire("held");
  ASSERT_TRUE(held);
  LeaderElector waiter(store_, options(300ms));
  Outcome o = acquire(waiter, "held");
  ASSERT_FALSE(o.error);
  ASSERT_FALSE(o.acq);
  EXPECT_EQ(o.acq.skipped.reason, SkipReason::contention);
  EXPECT_GE(store_->async_attempts(), 3) << "backoff pauses, then one attempt at the end";
}

TEST_F(AsyncAcquireTest, CancellingTheWaitSkipsAsCancelledAtOnce) {
  LeaderElector holder(store_, options(0s));
  auto held = holder.acquire("cancel");
  ASSERT_TRUE(held);
  LeaderElector waiter(store_, options(60s));
  std::stop_source stop;
  std::promise<Outcome> p;
  waiter.acquire_async("cancel", stop.get_token(), [&p](Acquisition acq, std::exception_ptr e) {
    p.set_value(Outcome{std::move(acq), std::move(e), std::this_thread::get_id()});
  });
  EXPECT_TRUE(testkit::eventually([&] { return store_->async_attempts() >= 1; }));
  stop.request_stop();
  auto f = p.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready) << "the 60 s wait was not cancelled";
  Outcome o = f.get();
  ASSERT_FALSE(o.acq);
  EXPECT_EQ(o.acq.skipped.reason, SkipReason::cancelled);
}

TEST_F(AsyncAcquireTest, ANonRetryableErrorEndsTheWaitAtOnce) {
  store_->on_acquire = [](const LeaseRequest&, Deadline, LeaseStore&) -> Acquired {
    throw BackendError(ErrorCode::failed_precondition, "scripted", "held as another size");
  };
  LeaderElector e(store_, options(60s));
  Outcome o = acquire(e, "refused");
  ASSERT_TRUE(o.error);
  EXPECT_THROW(std::rethrow_exception(o.error), BackendError);
  EXPECT_EQ(store_->async_attempts(), 1);
}

TEST_F(AsyncAcquireTest, AGrantOfAnotherOwnerIsRefusedByTheCheckedStoreAsOnTheBlockingPath) {
  // A store defect: the lease granted is not the request's. Through leader::open's CheckedStore
  // the asynchronous attempt is checked as the blocking one is: an internal error, never a held
  // lease that renewals would miss.
  store_->on_acquire = [](const LeaseRequest& r, Deadline d, LeaseStore& inner) -> Acquired {
    LeaseRequest other = r;
    other.owner = "0123456789abcdef0123456789abcdef";
    return inner.try_acquire(other, d);
  };
  LeaderElector e(detail::checked(store_), options(200ms));
  ASSERT_TRUE(e.acquires_async()) << "the CheckedStore keeps the store's asynchronous attempts";
  Outcome o = acquire(e, "defect");
  ASSERT_FALSE(o.acq);
  ASSERT_TRUE(o.error);
  try {
    std::rethrow_exception(o.error);
  } catch (const BackendError& b) {
    EXPECT_EQ(b.code(), ErrorCode::internal);
    EXPECT_NE(std::string(b.what()).find("granted a lease of owner"), std::string::npos)
        << b.what();
  }
  EXPECT_GE(store_->async_attempts(), 1);
}

TEST_F(AsyncAcquireTest, AnAttemptWithAnUnknownOutcomeLeavesNoGhostBehind) {
  // Every attempt is applied and then reported as timed out: at the end of the wait the
  // elector reports the backend error and releases what the lost attempts got.
  store_->on_acquire = [](const LeaseRequest& r, Deadline d, LeaseStore& inner) -> Acquired {
    (void)inner.try_acquire(r, d);
    throw BackendError(ErrorCode::deadline_exceeded, "scripted", "the reply was lost");
  };
  LeaderElector e(store_, options(200ms));
  Outcome o = acquire(e, "ghost");
  ASSERT_TRUE(o.error);
  try {
    std::rethrow_exception(o.error);
  } catch (const BackendError& b) {
    EXPECT_EQ(b.code(), ErrorCode::deadline_exceeded);
  }
  EXPECT_TRUE(testkit::eventually([&] {
    return !memory_->inspect("ghost", Deadline::after(1s)).held();
  })) << "the lease a lost attempt got is still held";
}

TEST_F(AsyncAcquireTest, AGrantToAnotherOwnerIsAStoreDefectNotALease) {
  store_->on_acquire = [](const LeaseRequest& r, Deadline, LeaseStore&) -> Acquired {
    return {Lease{r.lock, "someone-else", r.node_id, 7, 0, 0, r.ttl, {}}};
  };
  LeaderElector e(store_, options(1s));
  Outcome o = acquire(e, "defect");
  ASSERT_TRUE(o.error);
  try {
    std::rethrow_exception(o.error);
  } catch (const BackendError& b) {
    EXPECT_EQ(b.code(), ErrorCode::internal) << b.what();
  }
}

TEST_F(AsyncAcquireTest, SkipOnBackendErrorReportsABackendErrorSkip) {
  store_->on_acquire = [](const LeaseRequest&, Deadline, LeaseStore&) -> Acquired {
    throw BackendError(ErrorCode::unavailable, "scripted", "down");
  };
  ElectionOptions o = options(100ms);
  o.on_backend_error = OnBackendError::skip;
  LeaderElector e(store_, o);
  Outcome out = acquire(e, "down");
  ASSERT_FALSE(out.error);
  ASSERT_FALSE(out.acq);
  EXPECT_EQ(out.acq.skipped.reason, SkipReason::backend_error);
}

TEST_F(AsyncAcquireTest, OnATestClockTheElectorDoesNotAcquireAsynchronously) {
  LeaderElector e(store_, options(1s), ElectorHooks{.clock = std::make_shared<FakeClock>()});
  EXPECT_FALSE(e.acquires_async());
  EXPECT_THROW(e.acquire_async("x", {}, [](Acquisition, std::exception_ptr) {}), InvalidArgument);
  // A store without the capability.
  EXPECT_FALSE(LeaderElector(memory_, options(1s)).acquires_async());
}

}  // namespace
}  // namespace leader
