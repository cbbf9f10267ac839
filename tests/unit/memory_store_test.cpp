// The memory store's own safety rules (issue 10) on a fake clock: the same owner re-acquires its
// lease (decision 1), the group size is per lock (decision 2), renew sets expiry to now + ttl, and
// a released slot is reused clean.
#include <gtest/gtest.h>

#include <string>

#include "leader/errors.hpp"
#include "leader/lock_listing.hpp"
#include "leader/names.hpp"
#include "leader/stores/memory.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;

class MemoryStoreTest : public ::testing::Test {
 protected:
  LeaseRequest request(Duration ttl, int slots = 0, std::string owner = new_owner_token()) {
    return {"lock", std::move(owner), "node", ttl, slots};
  }
  static Deadline soon() { return Deadline::after(1s); }
  /// Expects failed_precondition naming the held and the asked size.
  void expect_refused(const LeaseRequest& r, const std::string& held, const std::string& asked) {
    try {
      auto got = store_->try_acquire(r, soon());
      ADD_FAILURE() << "no error (" << (got ? "granted" : "contention") << ")";
    } catch (const BackendError& e) {
      EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
      const std::string expected =
          "lock 'lock' is held as " + held + "; this request asks for " + asked;
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  std::shared_ptr<LeaseStore> store_ = make_memory_store({clock_});
};

TEST_F(MemoryStoreTest, TheSameOwnerGetsItsLiveLeaseBackWithItsTokenAndANewExpiry) {
  auto first = store_->try_acquire(request(2s), soon());
  ASSERT_TRUE(first);
  clock_->advance(1500ms);
  auto again = store_->try_acquire(request(10s, 0, first.lease->owner), soon());
  ASSERT_TRUE(again);
  EXPECT_EQ(again.lease->fencing_token, first.lease->fencing_token);
  EXPECT_EQ(again.lease->slot, 0);
  EXPECT_EQ(store_->inspect("lock", soon()).holders.at(0).expires_in, 10s);
  EXPECT_FALSE(store_->try_acquire(request(10s), soon()));
  auto shorter = store_->try_acquire(request(1s, 0, first.lease->owner), soon());
  ASSERT_TRUE(shorter);
  EXPECT_EQ(store_->inspect("lock", soon()).holders.at(0).expires_in, 1s);
  clock_->advance(1s);
  auto next = store_->try_acquire(request(10s), soon());
  ASSERT_TRUE(next);
  EXPECT_GT(next.lease->fencing_token, first.lease->fencing_token);
}

TEST_F(MemoryStoreTest, TheSameOwnerKeepsItsGroupSlotAndNeverTakesASecondOne) {
  ASSERT_TRUE(store_->try_acquire(request(10s, 3), soon()));
  auto mine = store_->try_acquire(request(10s, 3), soon());
  ASSERT_TRUE(mine);
  auto again = store_->try_acquire(request(10s, 3, mine.lease->owner), soon());
  ASSERT_TRUE(again);
  EXPECT_EQ(again.lease->slot, mine.lease->slot);
  EXPECT_EQ(again.lease->fencing_token, mine.lease->fencing_token);
  EXPECT_EQ(store_->inspect("lock", soon()).holders.size(), 2u);
}

TEST_F(MemoryStoreTest, ASingleLeaderAndAGroupCannotShareALiveLock) {
  auto single = store_->try_acquire(request(2s), soon());
  ASSERT_TRUE(single);
  expect_refused(request(2s, 2), "a single leader", "a group of 2 slots");
  expect_refused(request(2s, 1), "a single leader", "a group of 1 slot");
  clock_->advance(2s);
  auto group = store_->try_acquire(request(2s, 2), soon());
  ASSERT_TRUE(group) << "the new size applies once the holder expired";
  expect_refused(request(2s), "a group of 2 slots", "a single leader");
  EXPECT_EQ(store_->release(*group.lease, 0s, soon()), LeaseStatus::ok);
  EXPECT_TRUE(store_->try_acquire(request(2s), soon())) << "refused after the release";
}

TEST_F(MemoryStoreTest, GroupsOfTwoAndThreeCannotShareALiveLock) {
  auto a = store_->try_acquire(request(2s, 2), soon());
  auto b = store_->try_acquire(request(2s, 2), soon());
  ASSERT_TRUE(a && b);
  expect_refused(request(2s, 3), "a group of 2 slots", "a group of 3 slots");
  EXPECT_EQ(store_->release(*a.lease, 0s, soon()), LeaseStatus::ok);
  expect_refused(request(2s, 3), "a group of 2 slots", "a group of 3 slots");
  clock_->advance(2s);
  for (int i = 0; i < 3; ++i) {
    auto got = store_->try_acquire(request(2s, 3), soon());
    ASSERT_TRUE(got);
    EXPECT_EQ(got.lease->slot, i);
  }
}

TEST_F(MemoryStoreTest, RenewSetsTheExpiryToNowPlusTtlShorterOrLonger) {
  auto got = store_->try_acquire(request(30s), soon());
  ASSERT_TRUE(got);
  Lease lease = *got.lease;
  const Renewal renewal = store_->renew(lease, 1s, soon());
  ASSERT_EQ(renewal.status, LeaseStatus::ok);
  EXPECT_EQ(renewal.ttl, 1s);
  clock_->advance(999ms);
  EXPECT_FALSE(store_->try_acquire(request(1s), soon()));
  ASSERT_EQ(store_->renew(lease, 3s, soon()).status, LeaseStatus::ok);
  clock_->advance(2999ms);
  EXPECT_FALSE(store_->try_acquire(request(1s), soon()));
  clock_->advance(1ms);
  EXPECT_TRUE(store_->try_acquire(request(1s), soon()));
}

// A released slot keeps its row for reuse (issue 14, target 5): nothing of the old holder may
// survive in it: the old owner's renew and release find nothing, the next holder gets a new
// token and its own owner and node, and listings show only live holders.
TEST_F(MemoryStoreTest, AReleasedSlotIsReusedWithANewTokenAndNothingOfTheOldHolder) {
  auto old_lease = store_->try_acquire({"lock", new_owner_token(), "old-node", 10s, 0}, soon());
  ASSERT_TRUE(old_lease);
  ASSERT_EQ(store_->release(*old_lease.lease, 0s, soon()), LeaseStatus::ok);
  EXPECT_TRUE(store_->inspect("lock", soon()).holders.empty());
  EXPECT_TRUE(list_locks(*store_, "", soon()).empty())
      << "a lock with no live holder is not listed";
  EXPECT_EQ(store_->renew(*old_lease.lease, 10s, soon()).status, LeaseStatus::lost);
  EXPECT_EQ(store_->release(*old_lease.lease, 0s, soon()), LeaseStatus::lost);
  auto next = store_->try_acquire({"lock", new_owner_token(), "new-node", 10s, 0}, soon());
  ASSERT_TRUE(next);
  EXPECT_EQ(next.lease->slot, 0);
  EXPECT_GT(next.lease->fencing_token, old_lease.lease->fencing_token);
  EXPECT_EQ(store_->renew(*old_lease.lease, 10s, soon()).status, LeaseStatus::lost)
      << "the old owner's token does not match the reused slot";
  const LockState state = store_->inspect("lock", soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].owner, next.lease->owner);
  EXPECT_EQ(state.holders[0].node_id, "new-node");
  EXPECT_EQ(state.holders[0].fencing_token, next.lease->fencing_token);
  // A release that keeps the lease for a while keeps it held until then, then frees the slot.
  ASSERT_EQ(store_->release(*next.lease, 2s, soon()), LeaseStatus::ok);
  EXPECT_FALSE(store_->try_acquire(request(10s), soon()));
  clock_->advance(2s);
  auto third = store_->try_acquire(request(10s), soon());
  ASSERT_TRUE(third);
  EXPECT_GT(third.lease->fencing_token, next.lease->fencing_token);
}

// A lock used by a group of 3 and later, once every holder expired, by a single leader: the
// single leader takes slot 0, the group's other (expired) rows are never reported.
TEST_F(MemoryStoreTest, AGroupShrunkToASingleLeaderShowsOnlyTheLiveHolder) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store_->try_acquire(request(2s, 3), soon()));
  clock_->advance(2s);
  auto single = store_->try_acquire(request(10s), soon());
  ASSERT_TRUE(single);
  EXPECT_EQ(single.lease->slot, 0);
  EXPECT_FALSE(store_->try_acquire(request(10s), soon()));
  const std::vector<LockState> listed = list_locks(*store_, "lo", soon());
  ASSERT_EQ(listed.size(), 1u);
  ASSERT_EQ(listed[0].holders.size(), 1u);
  EXPECT_EQ(listed[0].holders[0].slot, 0);
  expect_refused(request(2s, 3), "a single leader", "a group of 3 slots");
}

}  // namespace
}  // namespace leader
