// The LockWatcher contract (include/leader/lock_watching.hpp), on every store that watches
// (etcd, Consul, ZooKeeper, Kubernetes, Redis, PostgreSQL; the others are skipped: observe_lock
// polls them): each
// change is reported in order and without waiting for the poll interval, a holder that vanishes
// without releasing is reported once the server frees its lease, a quiet watch ends at its
// deadline and on a stop request, a stale snapshot is answered at once. The release-to-callback
// p50 of the watch and of the inspect() poll is printed (no timed assertion: figures only).

#include <algorithm>
#include <cstdio>
#include <thread>

#include "faulty_store.hpp"
#include "helpers.hpp"
#include "leader/campaign.hpp"
#include "leader/lock_watching.hpp"
#include "seen_changes.hpp"

namespace leader::contract {
namespace {

constexpr int kChanges = 10;

using Seen = test::SeenChanges;

Ms p50(std::vector<Ms> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? Ms{0} : v[v.size() / 2];
}

// observe_lock into `seen` until `stop`; a failed read or watch is a test failure naming it,
// not an exception escaping the observer's thread (which would abort the whole binary).
void observe_quietly(LeaseStore& store, const std::string& name, Seen& seen,
                     const std::stop_token& stop, ObserveOptions options) {
  try {
    observe_lock(
        store, name, [&](const LockState& s) { return seen.record(s); }, stop, options);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "observe_lock of " << name << " failed: " << e.what();
  }
}

LeaseRequest watch_request(const std::string& name, Duration ttl) {
  return {name, new_owner_token(), "watch-node", ttl, 0};
}

// Acquires and releases `name` kChanges times through `store`, each step once the observer of
// `observed` saw the last; checks the reported order and returns the latencies.
std::vector<Ms> churn(const Backend& b, LeaseStore& store, const std::string& name,
                      LeaseStore& observed, ObserveOptions options) {
  Seen seen;
  std::jthread observer(
      [&](const std::stop_token& stop) { observe_quietly(observed, name, seen, stop, options); });
  const Duration limit = b.lease_unit * 10;
  std::vector<Ms> latencies;
  std::vector<std::uint64_t> expected{0};
  EXPECT_TRUE(seen.wait_for(1, limit));
  for (int i = 0; i < kChanges; ++i) {
    auto got = store.try_acquire(watch_request(name, b.lease_unit * 10), soon());
    if (!got) {
      ADD_FAILURE() << "acquire " << i << " was refused";
      break;
    }
    expected.push_back(got.lease->fencing_token);
    if (!seen.wait_for(expected.size(), limit)) {
      ADD_FAILURE() << "the acquire " << i << " was never reported";
      break;
    }
    const auto released = SteadyClock::now();
    EXPECT_EQ(store.release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
    expected.push_back(0);
    const auto reported = seen.wait_for(expected.size(), limit);
    if (!reported) {
      ADD_FAILURE() << "the release " << i << " was never reported";
      break;
    }
    latencies.push_back(std::chrono::duration_cast<Ms>(*reported - released));
  }
  observer.request_stop();
  observer.join();
  EXPECT_EQ(seen.tokens(), expected) << "every change, in order, none twice";
  return latencies;
}

// The cases below run on stores that watch and are skipped on the others.
#define LEADER_SKIP_UNLESS_WATCHED(store) \
  if (lock_watcher(*(store)) == nullptr)  \
  GTEST_SKIP() << backend().name << " has no LockWatcher: observe_lock polls it"

TEST_P(ContractTest, WatchReportsEachChangeInOrderAndTheLatencyIsPrinted) {
  auto st = store();
  LEADER_SKIP_UNLESS_WATCHED(st);
  const auto name = lock();
  // The same interval for both: the watch does not wait for it, the poll does. FaultyStore with
  // no fault switched on is a plain forwarding LeaseStore that reports no capabilities: it hides
  // the watch, so observe_lock polls through it.
  test::FaultyStore poll_only(st);
  ASSERT_EQ(lock_watcher(poll_only), nullptr);
  const ObserveOptions options{.interval = std::chrono::milliseconds(200)};
  const auto watched = churn(backend(), *st, name, *st, options);
  const auto polled = churn(backend(), *st, name, poll_only, options);
  ASSERT_EQ(watched.size(), static_cast<std::size_t>(kChanges));
  ASSERT_EQ(polled.size(), static_cast<std::size_t>(kChanges));
  ::testing::Test::RecordProperty("watch_p50_ms", std::to_string(p50(watched).count()));
  ::testing::Test::RecordProperty("poll_p50_ms", std::to_string(p50(polled).count()));
  std::printf(
      "%s release-to-callback latency, p50 of %d: watch %lld ms, poll (interval 200 ms) "
      "%lld ms\n",
      backend().name.c_str(), kChanges, static_cast<long long>(p50(watched).count()),
      static_cast<long long>(p50(polled).count()));
}

// A holder whose client goes away without releasing (its session closes, or its lease simply
// runs out on the server): the observer hears of it once the server frees the lock, well before
// its recheck (60 s) would have re-read.
TEST_P(ContractTest, WatchReportsAHolderThatVanishesWithoutReleasing) {
  auto st = store();
  LEADER_SKIP_UNLESS_WATCHED(st);
  const auto name = lock();
  Seen seen;
  std::jthread observer([&](const std::stop_token& stop) {
    observe_quietly(*st, name, seen, stop,
                    {.interval = std::chrono::seconds(1), .recheck = std::chrono::seconds(60)});
  });
  const Duration limit = backend().lease_unit * 10;
  ASSERT_TRUE(seen.wait_for(1, limit));
  std::uint64_t token = 0;
  {
    auto holder = backend().open();
    auto got = holder->try_acquire(watch_request(name, backend().lease_unit * 2), soon());
    ASSERT_TRUE(got);
    token = got.lease->fencing_token;
    ASSERT_TRUE(seen.wait_for(2, limit));
  }  // never renewed, never released
  ASSERT_TRUE(seen.wait_for(3, backend().lease_unit * 15)) << "the holder's end was never reported";
  EXPECT_EQ(seen.tokens(), (std::vector<std::uint64_t>{0, token, 0}));
}

TEST_P(ContractTest, AQuietWatchEndsAtItsDeadlineOrAStopAndAStaleSnapshotIsAnsweredAtOnce) {
  auto st = store();
  LEADER_SKIP_UNLESS_WATCHED(st);
  LockWatcher* w = lock_watcher(*st);
  const auto name = lock();
  EXPECT_THROW((void)w->watch("bad name!", LockState{}, soon(), {}), InvalidArgument);
  auto got = st->try_acquire(watch_request(name, backend().lease_unit * 20), soon());
  ASSERT_TRUE(got);
  const LockState before = st->inspect(name, soon());
  std::stop_source never;
  const LockState after =
      w->watch(name, before, Deadline::after(std::chrono::milliseconds(500)), never.get_token());
  EXPECT_TRUE(same_holders(before, after));

  std::stop_source stop;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop.request_stop();
  });
  const auto start = SteadyClock::now();
  const LockState stopped =
      w->watch(name, before, Deadline::after(std::chrono::seconds(60)), stop.get_token());
  EXPECT_TRUE(same_holders(before, stopped));
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(30))
      << "a stop request did not end the watch";
  // Already requested: returns at once, unchanged.
  EXPECT_TRUE(same_holders(
      before, w->watch(name, before, Deadline::after(std::chrono::seconds(60)), stop.get_token())));

  // A change made before the watch (the caller's snapshot is stale) is returned at once.
  EXPECT_EQ(st->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
  const LockState free =
      w->watch(name, before, Deadline::after(std::chrono::seconds(60)), never.get_token());
  EXPECT_FALSE(free.held());
}

}  // namespace
}  // namespace leader::contract

LEADER_CONTRACT_CASE_FILE(watch)
