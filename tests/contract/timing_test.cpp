// Contract cases 8, 11, 12, 13, 14, 17, 20: expiry, min lease, auto-extend, lost-lease signal,
// fencing, backend outages and deadlines (stale owners: store_test.cpp).

#include <atomic>
#include <set>

#include "helpers.hpp"
#include "observer.hpp"

namespace leader::contract {
namespace {

Acquired raw_acquire(LeaseStore& s, const std::string& name, Ms ttl, int slots = 0) {
  return s.try_acquire({name, new_owner_token(), "raw-node", ttl, slots},
                       Deadline::after(Ms{5000}));
}

TEST_P(ContractTest, HolderThatStopsRenewingLosesTheLockAfterLeaseTime) {
  auto name = lock();
  const Ms lease = backend().lease_unit;
  auto got = raw_acquire(*store(), name, lease);
  ASSERT_TRUE(got);
  auto t0 = SteadyClock::now();
  LeaderElector other(backend().open(), quick(backend()));
  EXPECT_FALSE(other.run_if_leader(name, [] {}));
  LeaderElector waiter(backend().open(), quick(backend(), lease * 4));
  EXPECT_TRUE(waiter.run_if_leader(name, [] {}));
  EXPECT_GE(since(t0), lease - Ms{100});
}

TEST_P(ContractTest, MinLeaseTimeKeepsTheLockAfterAFastActionThenFreesIt) {
  auto name = lock();
  const Ms lease = backend().lease_unit;
  auto o = quick(backend());
  o.lease_time = lease * 4;
  o.min_lease_time = lease;
  LeaderElector e(store(), o);
  auto t0 = SteadyClock::now();
  EXPECT_TRUE(e.run_if_leader(name, [] {}));
  EXPECT_LT(since(t0), o.min_lease_time);  // the caller is not blocked
  // The server is the judge: when does it let another owner in?
  test::Observer observer(backend().open(), name, {.ttl = lease * 10});
  ASSERT_TRUE(observer.wait_for_takeover(o.lease_time + lease));
  EXPECT_GE(observer.contended(), 1) << "the lock was free right after the action";
  const auto held_for = std::chrono::duration_cast<Ms>(*observer.takeover() - t0);
  // The grant came after t0, so the server must hold it until at least t0 + min_lease_time (less
  // the observer's own round trip), and free it well before lease_time.
  EXPECT_GE(held_for, o.min_lease_time - lease / 20);
  EXPECT_LT(held_for, o.lease_time);
}

TEST_P(ContractTest, AutoExtendKeepsTheLockForAnActionLongerThanLeaseTime) {
  auto name = lock();
  const Ms lease = backend().lease_unit;
  auto o = quick(backend());
  o.auto_extend = true;
  LeaderElector e(store(), o);
  bool stopped = false;
  EXPECT_TRUE(e.run_if_leader(name, [&](LeaderContext& ctx) {
    test::Observer observer(backend().open(), name, {.ttl = lease * 10, .poll = lease / 5});
    std::this_thread::sleep_for(lease * 5 / 2);
    stopped = ctx.stop_token().stop_requested();
    observer.stop();
    EXPECT_FALSE(observer.takeover().has_value()) << "the server let another owner in";
    EXPECT_GE(observer.contended(), 1) << "the observer never got an answer";
  }));
  EXPECT_FALSE(stopped);
}

// Case 14 (the stop signal fires before the server can expire the lease) is judged by the server
// in judged_test.cpp.

TEST_P(ContractTest, FencingTokensStrictlyIncreaseAcrossOwnersRestartsAndReconnects) {
  LEADER_CONTRACT_NEEDS(outage);
  auto name = lock();
  std::vector<std::uint64_t> tokens;
  auto take = [&](std::shared_ptr<LeaseStore> s) {
    LeaderElector e(std::move(s), quick(backend(), backend().lease_unit * 2));
    auto t = e.run_if_leader(name, [](LeaderContext& c) { return c.fencing_token(); });
    ASSERT_TRUE(t.has_value());
    tokens.push_back(*t);
  };
  take(store());
  take(backend().open());
  take(store());
  take(backend().open());  // a "restarted" client
  {
    Outage outage(backend());
    std::this_thread::sleep_for(Ms{200});
  }
  take(store());  // after the backend came back (reconnect)
  take(backend().open());
  LeaderGroupElector g(store(), GroupOptions{.election = {.wait_time = Ms{0},
                                                          .lease_time = backend().lease_unit,
                                                          .node_id = test::unique_name("g")},
                                             .max_leaders = 2});
  auto gt = g.run_if_leader(name, [](LeaderContext& c) { return c.fencing_token(); });
  ASSERT_TRUE(gt.has_value()) << "a group on the freed lock was not elected";
  tokens.push_back(*gt);
  for (std::size_t i = 1; i < tokens.size(); ++i) EXPECT_GT(tokens[i], tokens[i - 1]) << i;
}

TEST_P(ContractTest, BackendDownGivesAClearErrorOrTheChosenSkipAndWorkResumesAfter) {
  LEADER_CONTRACT_NEEDS(outage);
  auto name = lock();
  auto o = quick(backend());
  o.call_timeout = Ms{500};
  LeaderElector rethrow(store(), o);
  o.on_backend_error = OnBackendError::skip;
  LeaderElector skip(store(), o);
  o.on_backend_error = OnBackendError::fail_open;
  LeaderElector open_fail(store(), o);
  {
    Outage outage(backend());
    auto t0 = SteadyClock::now();
    bool ran = false;
    try {
      (void)rethrow.run_if_leader(name, [&] { ran = true; });
      ADD_FAILURE() << "no error while the backend was down";
    } catch (const BackendError& e) {
      EXPECT_TRUE(e.code() == ErrorCode::unavailable || e.code() == ErrorCode::deadline_exceeded)
          << e.what();
    }
    EXPECT_FALSE(ran);
    EXPECT_LT(since(t0), Ms{500} + Ms{1500});
    auto r = skip.run_if_leader_result(name, [] {});
    ASSERT_TRUE(r.skipped());
    EXPECT_EQ(r.skip_reason(), SkipReason::backend_error);
    auto f = open_fail.run_if_leader_result(name, [] { return 3; });
    ASSERT_TRUE(f.elected());
    EXPECT_TRUE(f.lease()->fail_open);
  }
  LeaderElector after(store(), quick(backend(), backend().lease_unit * 10));
  EXPECT_TRUE(after.run_if_leader(name, [] {}));
}

TEST_P(ContractTest, EveryStoreCallRespectsItsDeadline) {
  LEADER_CONTRACT_NEEDS(outage);
  auto name = lock();
  auto s = store();
  auto got = raw_acquire(*s, name, backend().lease_unit * 10);
  ASSERT_TRUE(got);
  Outage outage(backend());
  const Ms budget{300};
  auto check = [&](const char* what, auto&& call) {
    auto t0 = SteadyClock::now();
    try {
      call();
    } catch (const BackendError&) {
    }
    EXPECT_LT(since(t0), budget + Ms{1500}) << what;
  };
  check("try_acquire with deadline", [&] {
    (void)s->try_acquire({lock("-y"), new_owner_token(), "n", backend().lease_unit, 0},
                         Deadline::after(budget));
  });
  Lease l = *got.lease;
  check("renew", [&] { (void)s->renew(l, backend().lease_unit, Deadline::after(budget)); });
  check("inspect", [&] { (void)s->inspect(name, Deadline::after(budget)); });
  check("list_candidates", [&] { (void)s->list_candidates("g", Deadline::after(budget)); });
  check("release", [&] { (void)s->release(l, Ms{0}, Deadline::after(budget)); });
}

}  // namespace
}  // namespace leader::contract

LEADER_CONTRACT_CASE_FILE(timing)
