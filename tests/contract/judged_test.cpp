// Stop-signal cases judged by the server (issue 10, "the server is the judge"): every case runs a
// holder whose renewals are disturbed and checks that its stop signal came at least the safety
// margin (minus scheduling slack) before the observer, a second client, really got the lock.

#include <string>
#include <utility>

#include "judge.hpp"
#include "scaled_clock.hpp"

namespace leader::contract {
namespace {

TEST_P(ContractTest, FailingRenewalsStopTheHolderBeforeTheServerLetsAnotherIn) {
  const Ms lease = backend().lease_unit;
  std::shared_ptr<test::FaultyStore> fs;
  const auto v = judged_conclusively(lock(), [&](const std::string& name) {
    fs = std::make_shared<test::FaultyStore>(backend().open());
    auto o = renewing(backend());
    auto verdict = judge(backend(), name,
                         {.store = fs,
                          .options = o,
                          .scenario = [&](LeaderContext&) { fs->fail_renew = true; },
                          .hold_limit = lease * 4});
    return std::pair{verdict, required_gap(o, o.lease_time)};
  });
  EXPECT_GE(fs->renew_calls(), 1) << "no renewal was attempted";
  EXPECT_TRUE(v.stop.has_value()) << "renewals failed for 4 leases without a stop signal";
}

// Renewals reach the server `delay` late; after two leases of work they start failing. The stop
// verdict is judged on every run. Only the scenario's own precondition, that at least `min_ok` of
// the delayed renewals were answered within what the delay left of the call timeout (83 ms of
// 333 ms with a 250 ms delay: a matter of the machine's load, seen missed by the 3-member etcd in
// a full ctest run with compilers in the background), is retried, on a fresh lock, up to 3 runs,
// as is an inconclusive verdict (judge.hpp).
void delayed_renewals(const Backend& b, const std::string& name, Ms delay, int min_ok) {
  const Ms lease = b.lease_unit;
  constexpr int kRuns = 3;
  int ok = 0;
  for (int run = 1; run <= kRuns; ++run) {
    auto fs = std::make_shared<test::FaultyStore>(b.open());
    fs->renew_delay = delay;
    auto o = renewing(b);
    auto v = judge(b, run == 1 ? name : name + "-run" + std::to_string(run),
                   {.store = fs,
                    .options = o,
                    .scenario =
                        [&](LeaderContext&) {
                          std::this_thread::sleep_for(lease * 2);
                          fs->fail_renew = true;
                        },
                    .hold_limit = lease * 4});
    ::testing::Test::RecordProperty("runs", std::to_string(run));
    const Duration gap = required_gap(o, o.lease_time);
    if (run < kRuns && inconclusive(v, gap)) continue;  // judge.hpp: ask again, on a fresh lock
    expect_stop_before_takeover(v, gap);
    if (::testing::Test::HasFailure()) {
      if (v.started)
        ADD_FAILURE() << "the holder's store calls, ms since the action started:\n"
                      << fs->timeline(*v.started);
      return;
    }
    ok = fs->renew_ok();
    if (ok >= min_ok) return;
  }
  ADD_FAILURE() << "in " << kRuns << " runs, the last had " << ok << " delayed renewals answered "
                << "within the call timeout, fewer than the " << min_ok
                << " this case needs to judge them";
}

TEST_P(ContractTest, RenewalsDelayedOnTheWayKeepTheStopSignalBeforeTheServerLetsAnotherIn) {
  delayed_renewals(backend(), lock(), backend().lease_unit / 4, 2);
}

TEST_P(ContractTest, RenewalsDelayedBeyondTheCallTimeoutKeepTheStopSignalBeforeTakeover) {
  delayed_renewals(backend(), lock(), backend().lease_unit / 2, 0);
}

// An inconclusive verdict (judge.hpp: the observer's grant lies on both sides of the margin) runs
// the case again on a fresh lock, up to 6 runs; the last is judged at the earliest instant (the
// ZooKeeper ensemble's runs were inconclusive 9 times in 14 under load: docs/faults.md).
TEST_P(ContractTest, AnOutageStopsTheHolderBeforeTheServerLetsAnotherInAfterIt) {
  LEADER_CONTRACT_NEEDS(outage);
  const Ms lease = backend().lease_unit;
  constexpr int kRuns = 6;
  for (int run = 1; run <= kRuns; ++run) {
    auto o = renewing(backend());
    TimePoint outage_end{};
    auto v =
        judge(backend(), run == 1 ? lock() : lock() + "-run" + std::to_string(run),
              {.store = backend().open(),
               .options = o,
               .scenario =
                   [&](LeaderContext& ctx) {
                     {
                       Outage outage(backend());
                       eventually([&] { return ctx.stop_token().stop_requested(); }, lease * 3);
                     }
                     outage_end = SteadyClock::now();
                   },
               .hold_limit = lease * 4,
               .frozen_until = [&] { return outage_end; }});
    const Duration gap = required_gap(o, o.lease_time);
    ::testing::Test::RecordProperty("runs", std::to_string(run));
    if (run < kRuns && inconclusive(v, gap)) continue;
    EXPECT_TRUE(v.stop.has_value()) << "no stop signal during an outage of 3 leases";
    expect_stop_before_takeover(v, gap);
    if (run > 1 && ::testing::Test::HasFailure())
      ADD_FAILURE() << "the " << run - 1 << " runs before were inconclusive";
    return;
  }
}

TEST_P(ContractTest, ExtendLongerThanTheLeaseKeepsTheStopSignalBeforeTheServerLetsAnotherIn) {
  const Ms lease = backend().lease_unit;
  judged_conclusively(lock(), [&](const std::string& name) {
    auto fs = std::make_shared<test::FaultyStore>(backend().open());
    auto o = renewing(backend());
    auto v = judge(backend(), name,
                   {.store = fs,
                    .options = o,
                    .scenario =
                        [&](LeaderContext& ctx) {
                          ASSERT_TRUE(ctx.extend(lease * 2));
                          // One scheduled renewal after the extend reaches the server, then none.
                          ASSERT_TRUE(eventually([&] { return fs->renew_ok() >= 2; }, lease * 2));
                          fs->fail_renew = true;
                        },
                    .hold_limit = lease * 5});
    return std::pair{v, required_gap(o, lease * 2)};
  });
}

TEST_P(ContractTest, ExtendShorterRacingARenewalKeepsTheStopSignalBeforeTheServerLetsAnotherIn) {
  const Ms lease = backend().lease_unit;
  judged_conclusively(lock(), [&](const std::string& name) {
    auto fs = std::make_shared<test::FaultyStore>(backend().open());
    fs->reply_delay = lease / 6;  // the scheduled renewal's reply is late ...
    fs->delay_only_ttl = lease;   // ... but not the extend's
    auto o = renewing(backend());
    auto v =
        judge(backend(), name,
              {.store = fs,
               .options = o,
               .scenario =
                   [&](LeaderContext& ctx) {
                     // The renewal has reached the server; its "ok" is still on the way.
                     ASSERT_TRUE(eventually([&] { return fs->renew_answered() >= 1; }, lease * 2));
                     ASSERT_TRUE(ctx.extend(lease / 2));
                     fs->fail_renew = true;  // no renewal after the extend reaches the server
                   },
               .hold_limit = lease * 4});
    return std::pair{v, required_gap(o, lease / 2)};
  });
}

TEST_P(ContractTest, GrantedTtlShorterThanAskedStopsTheHolderBeforeTheServerLetsAnotherIn) {
  const Ms lease = backend().lease_unit;
  judged_conclusively(lock(), [&](const std::string& name) {
    auto fs = std::make_shared<test::FaultyStore>(backend().open());
    fs->ttl_cap = lease;  // the server really grants (and expires) one lease, not the two asked
    auto o = renewing(backend());
    o.lease_time = lease * 2;
    auto v = judge(backend(), name,
                   {.store = fs,
                    .options = o,
                    .scenario = [&](LeaderContext&) { fs->fail_renew = true; },
                    .hold_limit = lease * 4});
    return std::pair{v, required_gap(o, fs->ttl_cap.load())};
  });
}

TEST_P(ContractTest, GrantedTtlBelowAnExplicitMarginIsRefusedOrStopsInTime) {
  const Ms lease = backend().lease_unit;
  auto fs = std::make_shared<test::FaultyStore>(backend().open());
  fs->ttl_cap = lease;
  auto o = renewing(backend());
  o.lease_time = lease * 4;
  o.safety_margin = lease * 2;  // more than the store grants: cannot be kept
  Verdict v;
  try {
    v = judge(backend(), lock(),
              {.store = fs,
               .options = o,
               .scenario = [&](LeaderContext&) { fs->fail_renew = true; },
               .hold_limit = lease * 4});
  } catch (const Error& e) {  // refused with a clear error: safe
    SUCCEED() << e.what();
    return;
  }
  if (!v.ran) return;  // refused as a skip: safe
  expect_stop_before_takeover(v, required_gap(o, fs->ttl_cap.load()));
}

// No wrapper: what the store itself grants. ZooKeeper caps every grant at its negotiated session
// timeout (lease_unit here), below this margin, so it must refuse; the others grant the three
// units asked and keep the margin.
TEST_P(ContractTest, AnExplicitMarginTheStoreItselfCannotGrantIsRefusedOrKept) {
  const Ms lease = backend().lease_unit;
  auto o = renewing(backend());
  o.lease_time = lease * 3;
  o.safety_margin = lease * 3 / 2;  // at most lease_time / 2 with auto_extend
  // An inconclusive verdict (judge.hpp) runs again on a fresh lock, up to 3 runs, as
  // judged_conclusively does (seen on postgres_standby at load 9: an observer attempt sent 0.8 s
  // before the server's expiry and run by the server after it).
  constexpr int kRuns = 3;
  for (int run = 1; run <= kRuns; ++run) {
    auto fs = std::make_shared<test::FaultyStore>(backend().open());  // only to fail renewals
    Duration granted{};
    Verdict v;
    try {
      v = judge(backend(), run == 1 ? lock() : lock("-run" + std::to_string(run)),
                {.store = fs,
                 .options = o,
                 .scenario =
                     [&](LeaderContext& ctx) {
                       granted = ctx.lease().granted_ttl;
                       fs->fail_renew = true;
                     },
                 .hold_limit = lease * 4});
    } catch (const BackendError& e) {
      EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << e.what();
      ::testing::Test::RecordProperty("refused", e.what());
      return;
    }
    ASSERT_TRUE(v.ran);
    EXPECT_GT(granted, o.safety_margin) << "ran on a grant the margin does not fit";
    const Duration gap = required_gap(o, granted);
    ::testing::Test::RecordProperty("runs", std::to_string(run));
    if (run < kRuns && inconclusive(v, gap)) continue;
    expect_stop_before_takeover(v, gap);
    return;
  }
}

TEST_P(ContractTest, ASlowLocalClockStillStopsTheHolderBeforeTheServerLetsAnotherIn) {
  const Ms lease = backend().lease_unit;
  constexpr double kRate = 0.9;  // the holder's steady clock runs 10% slow
  auto o = renewing(backend());
  o.safety_margin = lease * 3 / 10;
  // At rate r the local deadline (lease - margin of local time) ends (lease - margin) / r of real
  // time after the grant: that, not the margin, is what is left before the server expiry.
  const auto left = lease - std::chrono::duration_cast<Ms>((lease - o.safety_margin) / kRate);
  ASSERT_GT(left, Ms{0});
  judged_conclusively(lock(), [&](const std::string& name) {
    auto fs = std::make_shared<test::FaultyStore>(backend().open());
    auto v = judge(backend(), name,
                   {.store = fs,
                    .options = o,
                    .clock = std::make_shared<test::ScaledClock>(kRate),
                    .scenario = [&](LeaderContext&) { fs->fail_renew = true; },
                    .hold_limit = lease * 4});
    return std::pair{v, left - scheduling_slack(left)};
  });
}

}  // namespace
}  // namespace leader::contract

LEADER_CONTRACT_CASE_FILE(judged)
