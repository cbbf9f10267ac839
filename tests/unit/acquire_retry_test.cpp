// Defect 5 of issue 10 (core part): a retry after an unknown outcome must not contend with its
// own ghost. One owner token per acquire() call, reused by every attempt; when the call gives up
// after an unknown outcome it releases the ghost, best effort.

#include <gtest/gtest.h>

#include "scripted_store.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;
using testkit::ScriptedStore;

BackendError lost_reply() {
  return BackendError(ErrorCode::deadline_exceeded, "scripted", "the reply was lost");
}

// The first try_acquire is granted on the server, but its reply is lost. Later attempts of the
// same owner get that lease back, as every store does after issue 10's shared decision 1.
struct GhostWorld {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<LeaseStore> server = make_memory_store({.clock = clock});
  std::shared_ptr<ScriptedStore> store = std::make_shared<ScriptedStore>(server);
  std::mutex mu;
  std::optional<Lease> ghost;
  std::atomic<int> attempts{0};

  explicit GhostWorld(bool every_reply_lost = false) {
    store->on_acquire = [this, every_reply_lost](const LeaseRequest& r, Deadline d,
                                                 LeaseStore& inner) -> Acquired {
      std::lock_guard lock(mu);
      const int n = ++attempts;
      if (ghost && ghost->owner == r.owner) {  // the store recognises its own lease
        Lease again = *ghost;
        if (inner.renew(again, r.ttl, d).status == LeaseStatus::ok) {
          if (every_reply_lost) throw lost_reply();
          return {again};
        }
      }
      Acquired got = inner.try_acquire(r, d);
      if (got && (n == 1 || every_reply_lost)) {
        ghost = *got.lease;
        throw lost_reply();
      }
      return got;
    };
  }
};

// Runs e.acquire(lock) on a thread while advancing the fake clock, so its backoff sleeps end.
template <class Elector>
Acquisition acquire_on_fake_time(Elector& e, const std::string& lock, FakeClock& clock) {
  std::optional<Acquisition> acq;
  std::atomic<bool> done{false};
  std::thread t([&] {
    acq.emplace(e.acquire(lock));
    done = true;
  });
  for (int i = 0; i < 2000 && !done; ++i) {
    clock.advance(50ms);
    testkit::eventually([&] { return done.load(); }, 2ms);
  }
  t.join();
  return std::move(*acq);
}

TEST(AcquireRetry, EveryAttemptOfOneCallUsesTheSameOwnerToken) {
  GhostWorld w;
  LeaderElector e(w.store, {.wait_time = 5s, .lease_time = 30s}, {.clock = w.clock, .seed = 3});
  Acquisition acq = acquire_on_fake_time(e, "job", *w.clock);
  ASSERT_TRUE(acq) << "the retry contended with its own ghost: " << acq.skipped.detail;
  auto requests = w.store->acquires();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].owner, requests[1].owner);
  EXPECT_EQ(acq.guard->info().fencing_token, w.ghost->fencing_token);
  acq.guard->release();
  EXPECT_TRUE(testkit::observer_takes_over(*w.server, "job"));
}

TEST(AcquireRetry, GivingUpAfterAnUnknownOutcomeReleasesTheGhost) {
  GhostWorld w(true);
  LeaderElector e(w.store, {.wait_time = 0s, .lease_time = 30s}, {.clock = w.clock});
  try {
    auto held = e.acquire("job");
    FAIL() << "no error although every reply was lost";
  } catch (const BackendError& err) {
    EXPECT_EQ(err.code(), ErrorCode::deadline_exceeded);
  }
  auto releases = w.store->releases();
  ASSERT_EQ(releases.size(), 1u) << "the ghost lease was left on the server";
  EXPECT_EQ(releases[0].first.owner, w.store->acquires().at(0).owner);
  EXPECT_TRUE(testkit::observer_takes_over(*w.server, "job"));
}

TEST(AcquireRetry, TheGhostOfAGroupAttemptIsReleasedFromItsOwnSlot) {
  GhostWorld w(true);
  ASSERT_TRUE(w.server->try_acquire({"pool", new_owner_token(), "other", 60s, 2},
                                    Deadline::after(1s)));  // slot 0 is someone else's
  LeaderGroupElector e(w.store,
                       {.election = {.wait_time = 0s, .lease_time = 30s}, .max_leaders = 2},
                       {.clock = w.clock});
  EXPECT_THROW((void)e.acquire("pool"), BackendError);
  auto state = w.server->inspect("pool", Deadline::after(1s));
  ASSERT_EQ(state.holders.size(), 1u) << "the ghost still holds a slot";
  EXPECT_EQ(state.holders[0].node_id, "other");
}

TEST(AcquireRetry, AGhostAttemptBoundsTheDeadlineOfTheLeaseItJoins) {
  GhostWorld w;  // the first attempt's lost reply may still reset the lease to 30 s later
  LeaderElector e(w.store, {.wait_time = 5s, .lease_time = 30s}, {.clock = w.clock, .seed = 3});
  Acquisition acq = acquire_on_fake_time(e, "job", *w.clock);
  ASSERT_TRUE(acq);
  auto& ctx = acq.guard->context();
  ASSERT_TRUE(ctx.extend(90s));
  EXPECT_LE(ctx.deadline(), w.clock->now() + 30s - 6s);
}

}  // namespace
}  // namespace leader
