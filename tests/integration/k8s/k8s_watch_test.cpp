// observe_lock over the Kubernetes watch API (LockWatcher) against the double, beyond the
// contract's watch cases (tests/contract/watch_test.cpp: order, release-to-callback p50 watched
// vs polled, a vanished holder, deadline, stop, a stale snapshot, a bad name): a group's slot
// Leases are watched by the lock's label, a client-go holder's unlabelled Lease by name, and an
// expired resourceVersion is listed again.

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "k8s_double.hpp"
#include "leader/campaign.hpp"
#include "leader/leader.hpp"
#include "leader/lock_watching.hpp"

namespace leader::k8s::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

// What an observer reported: the fencing tokens of each snapshot's holders (empty = free) and
// when it came.
struct Seen {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<std::uint64_t>> tokens;
  std::vector<Clock::time_point> at;

  bool record(const LockState& s) {
    std::lock_guard lock(mu);
    std::vector<std::uint64_t> t;
    for (const Holder& h : s.holders) t.push_back(h.fencing_token);
    tokens.push_back(std::move(t));
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

// observe_lock of `lock` on `store` into `seen`, on a thread of its own.
std::jthread observer(LeaseStore& store, const std::string& lock, Seen& seen,
                      ObserveOptions options = {.interval = 200ms, .recheck = 60s}) {
  return std::jthread([&store, lock, &seen, options](const std::stop_token& stop) {
    observe_lock(
        store, lock, [&](const LockState& s) { return seen.record(s); }, stop, options);
  });
}

LeaseRequest request(const std::string& lock, int slots = 0) {
  return {lock, new_owner_token(), "watch-node", 10s, slots};
}

// Acquires and releases `lock` `changes` times through `store`, each step once the observer of
// `observed` saw the last; checks the reported order.
void churn(LeaseStore& store, const std::string& lock, LeaseStore& observed, int changes) {
  Seen seen;
  auto watching = observer(observed, lock, seen);
  std::vector<std::vector<std::uint64_t>> expected{{}};
  EXPECT_TRUE(seen.wait_for(1));
  for (int i = 0; i < changes; ++i) {
    auto got = store.try_acquire(request(lock), soon());
    if (!got) {
      ADD_FAILURE() << "acquire " << i << " failed";
      break;
    }
    expected.push_back({got.lease->fencing_token});
    if (!seen.wait_for(expected.size())) {
      ADD_FAILURE() << "the acquire " << i << " was never reported";
      break;
    }
    EXPECT_EQ(store.release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
    expected.emplace_back();
    if (!seen.wait_for(expected.size())) {
      ADD_FAILURE() << "the release " << i << " was never reported";
      break;
    }
  }
  watching.request_stop();
  watching.join();
  std::lock_guard l(seen.mu);
  EXPECT_EQ(seen.tokens, expected);  // every change, in order, none twice
}

/// A Lease as client-go's LeaseLock creates it for `identity` (no annotations, no labels).
nlohmann::json client_go_lease(const std::string& name, const std::string& identity, int secs) {
  const std::string now = micro_time(std::chrono::system_clock::now());
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"holderIdentity", identity},
            {"leaseDurationSeconds", secs},
            {"acquireTime", now},
            {"renewTime", now},
            {"leaseTransitions", 0}}}};
}

class K8sWatch : public ::testing::Test {
 protected:
  Double server_;
};

TEST_F(K8sWatch, GroupSlotsAreWatchedByTheLockLabel) {
  auto s = server_.store("group");
  Seen seen;
  auto watching = observer(*s, "pool", seen);
  ASSERT_TRUE(seen.wait_for(1));
  auto a = s->try_acquire(request("pool", 2), soon());
  ASSERT_TRUE(a);
  ASSERT_TRUE(seen.wait_for(2));
  auto b = s->try_acquire(request("pool", 2), soon());
  ASSERT_TRUE(b);
  ASSERT_TRUE(seen.wait_for(3));
  EXPECT_EQ(s->release(*a.lease, Ms{0}, soon()), LeaseStatus::ok);
  ASSERT_TRUE(seen.wait_for(4));
  watching.request_stop();
  watching.join();
  std::lock_guard l(seen.mu);
  const std::vector<std::vector<std::uint64_t>> expected{
      {},
      {a.lease->fencing_token},
      {a.lease->fencing_token, b.lease->fencing_token},
      {b.lease->fencing_token}};
  EXPECT_EQ(seen.tokens, expected);
}

TEST_F(K8sWatch, AClientGoHolderOfAnUnlabelledLeaseIsWatchedByName) {
  auto s = server_.store("cg");
  auto created = s->api().create(client_go_lease("operator", "go-pod-1", 30), soon());
  ASSERT_EQ(created.status, 201);
  LockWatcher* w = lock_watcher(*s);
  const LockState held = s->inspect("operator", soon());
  ASSERT_TRUE(held.held());
  std::jthread releaser([&] {
    std::this_thread::sleep_for(300ms);
    nlohmann::json obj = created.body;  // client-go's release: holder "", duration 1
    obj["spec"]["holderIdentity"] = "";
    obj["spec"]["leaseDurationSeconds"] = 1;
    EXPECT_EQ(s->api().replace("operator", obj, soon()).status, 200);
  });
  const auto start = Clock::now();
  std::stop_source never;
  const LockState after = w->watch("operator", held, Deadline::after(60s), never.get_token());
  EXPECT_FALSE(after.held());
  EXPECT_LT(Clock::now() - start, 30s) << "the client-go release did not wake the watch";
}

TEST_F(K8sWatch, AnExpiredResourceVersionIsAnErrorEventAndAFreshListWatchesAgain) {
  Double small({"--watch-history", "1"});
  auto s = small.store("gone");
  const std::string selector = Api::label_selector("app=x");
  const auto listed = s->api().list("app=x", soon());
  const std::string old = listed.body["metadata"]["resourceVersion"];
  for (int i = 0; i < 3; ++i) (void)s->try_acquire(request("other-" + std::to_string(i)), soon());
  std::stop_source never;
  EXPECT_EQ(s->api().watch(selector, old, Deadline::after(5s), never.get_token()),
            WatchEnd::expired);
  const auto fresh = s->api().list("app=x", soon());
  EXPECT_EQ(s->api().watch(selector, fresh.body["metadata"]["resourceVersion"],
                           Deadline::after(1500ms), never.get_token()),
            WatchEnd::ended);

  // With one change kept, a busy neighbour in the namespace expires most watches' starting
  // point; the observer still reports every change, in order.
  std::atomic<bool> busy{true};
  std::jthread neighbour([&] {
    auto n = s->try_acquire({"neighbour", new_owner_token(), "n", 10s, 0}, soon());
    while (busy && n) {
      (void)s->renew(*n.lease, 10s, soon());
      std::this_thread::sleep_for(5ms);
    }
  });
  churn(*s, "busy", *s, 5);
  busy = false;
}

}  // namespace
}  // namespace leader::k8s::test
