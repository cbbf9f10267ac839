// The memory store's own safety rules (issue 10) on a fake clock: the same owner re-acquires its
// lease (decision 1), the group size is per lock (decision 2), and renew sets expiry to now + ttl.
#include <gtest/gtest.h>

#include <string>

#include "leader/errors.hpp"
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

}  // namespace
}  // namespace leader
