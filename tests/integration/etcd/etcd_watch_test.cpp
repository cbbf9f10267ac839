// observe_lock over etcd's Watch (LockWatcher) against the real server: each change is reported,
// in order, and promptly; the release-to-callback latency of the watch and of the inspect() poll
// is printed (p50 over kChanges releases). No timed assertion: the figures go to the output.

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "etcd/etcd_store.hpp"
#include "etcd_test_util.hpp"
#include "leader/lock_watching.hpp"

namespace leader::etcdtest {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kPrefix = "/leader-watch";
constexpr int kChanges = 20;

// The etcd store seen only as a LeaseStore: observe_lock polls it.
class PollOnly final : public LeaseStore {
 public:
  explicit PollOnly(std::shared_ptr<LeaseStore> inner) : inner_(std::move(inner)) {}
  [[nodiscard]] std::string_view scheme() const override { return inner_->scheme(); }
  Acquired try_acquire(const LeaseRequest& r, Deadline d) override {
    return inner_->try_acquire(r, d);
  }
  Renewal renew(const Lease& l, Duration ttl, Deadline d) override {
    return inner_->renew(l, ttl, d);
  }
  LeaseStatus release(const Lease& l, Duration keep_for, Deadline d) override {
    return inner_->release(l, keep_for, d);
  }
  [[nodiscard]] LockState inspect(std::string_view lock, Deadline d) override {
    return inner_->inspect(lock, d);
  }
  void put_candidate(std::string_view g, const Candidate& c, Duration ttl, Deadline d) override {
    inner_->put_candidate(g, c, ttl, d);
  }
  [[nodiscard]] std::vector<Candidate> list_candidates(std::string_view g, Deadline d) override {
    return inner_->list_candidates(g, d);
  }
  void remove_candidate(std::string_view g, std::string_view id, Deadline d) override {
    inner_->remove_candidate(g, id, d);
  }

 private:
  std::shared_ptr<LeaseStore> inner_;
};

// What an observer reported: the fencing token of each snapshot (0 = free) and when it came.
struct Seen {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::uint64_t> tokens;
  std::vector<Clock::time_point> at;

  bool record(const LockState& s) {
    std::lock_guard lock(mu);
    tokens.push_back(s.held() ? s.holders[0].fencing_token : 0);
    at.push_back(Clock::now());
    cv.notify_all();
    return true;
  }
  // Waits until `n` snapshots were reported; returns when the n-th came.
  std::optional<Clock::time_point> wait_for(std::size_t n, Duration limit = 20s) {
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, limit, [&] { return tokens.size() >= n; })) return std::nullopt;
    return at[n - 1];
  }
};

Ms p50(std::vector<Ms> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? Ms{0} : v[v.size() / 2];
}

// Acquires and releases `lock` kChanges times through `store`, each step once `observer` saw the
// last; checks the reported order and returns the release-to-callback latencies.
std::vector<Ms> churn(LeaseStore& store, const std::string& lock, LeaseStore& observed,
                      ObserveOptions options) {
  Seen seen;
  std::jthread observer([&](const std::stop_token& stop) {
    observe_lock(
        observed, lock, [&](const LockState& s) { return seen.record(s); }, stop, options);
  });
  std::vector<Ms> latencies;
  std::vector<std::uint64_t> expected{0};
  EXPECT_TRUE(seen.wait_for(1));
  for (int i = 0; i < kChanges; ++i) {
    auto got = store.try_acquire({lock, new_owner_token(), "watch-node", 10s, 0}, soon());
    if (!got) {
      ADD_FAILURE() << "acquire " << i << " failed";
      break;
    }
    expected.push_back(got.lease->fencing_token);
    if (!seen.wait_for(expected.size())) {
      ADD_FAILURE() << "the acquire " << i << " was never reported";
      break;
    }
    const auto released = Clock::now();
    EXPECT_EQ(store.release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
    expected.push_back(0);
    auto reported = seen.wait_for(expected.size());
    if (!reported) {
      ADD_FAILURE() << "the release " << i << " was never reported";
      break;
    }
    latencies.push_back(std::chrono::duration_cast<Ms>(*reported - released));
  }
  observer.request_stop();
  observer.join();
  std::lock_guard l(seen.mu);
  EXPECT_EQ(seen.tokens, expected);  // every change, in order, none twice
  return latencies;
}

TEST(EtcdWatch, EachChangeIsReportedInOrderAndTheLatencyIsPrinted) {
  auto s = open(uri(kPrefix));
  ASSERT_NE(lock_watcher(*s), nullptr);
  PollOnly poll(s);
  ASSERT_EQ(lock_watcher(poll), nullptr);
  const auto name = unique("churn");
  // The same interval for both: the watch does not wait for it, the poll does (and as each step
  // follows the report of the last, a release comes just after a poll: about one interval).
  const ObserveOptions options{.interval = 200ms};
  const auto watched = churn(*s, name, *s, options);
  const auto polled = churn(*s, name, poll, options);
  ASSERT_EQ(watched.size(), static_cast<std::size_t>(kChanges));
  ASSERT_EQ(polled.size(), static_cast<std::size_t>(kChanges));
  std::printf(
      "etcd release-to-callback latency, p50 of %d: watch %lld ms, poll (interval 200ms) %lld ms\n",
      kChanges, static_cast<long long>(p50(watched).count()),
      static_cast<long long>(p50(polled).count()));
}

TEST(EtcdWatch, ALeaseThatTimesOutIsReported) {
  auto s = open(uri(kPrefix));
  const auto name = unique("expiry");
  Seen seen;
  std::jthread observer([&](const std::stop_token& stop) {
    observe_lock(*s, name, [&](const LockState& st) { return seen.record(st); }, stop,
                 {.interval = 1s, .recheck = 60s});
  });
  ASSERT_TRUE(seen.wait_for(1));
  auto got = s->try_acquire({name, new_owner_token(), "watch-node", 2s, 0}, soon());
  ASSERT_TRUE(got);
  ASSERT_TRUE(seen.wait_for(2));
  ASSERT_TRUE(seen.wait_for(3, 15s)) << "the lease's expiry was never reported";  // not renewed
  std::lock_guard l(seen.mu);
  EXPECT_EQ(seen.tokens, (std::vector<std::uint64_t>{0, got.lease->fencing_token, 0}));
}

TEST(EtcdWatch, ADeadlineWithNoChangeReturnsTheUnchangedLockAndStopEndsTheWait) {
  auto s = open(uri(kPrefix));
  LockWatcher* w = lock_watcher(*s);
  ASSERT_NE(w, nullptr);
  const auto name = unique("quiet");
  auto got = s->try_acquire({name, new_owner_token(), "watch-node", 10s, 0}, soon());
  ASSERT_TRUE(got);
  const LockState before = s->inspect(name, soon());
  std::stop_source never;
  const LockState after = w->watch(name, before, Deadline::after(500ms), never.get_token());
  EXPECT_TRUE(same_holders(before, after));

  std::stop_source stop;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(300ms);
    stop.request_stop();
  });
  const auto start = Clock::now();
  const LockState stopped = w->watch(name, before, Deadline::after(60s), stop.get_token());
  EXPECT_TRUE(same_holders(before, stopped));
  EXPECT_LT(Clock::now() - start, 30s) << "a stop request did not end the watch";

  // A change made before the watch (the caller's snapshot is stale) is returned at once.
  EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
  const LockState free = w->watch(name, before, Deadline::after(60s), never.get_token());
  EXPECT_FALSE(free.held());
}

}  // namespace
}  // namespace leader::etcdtest
