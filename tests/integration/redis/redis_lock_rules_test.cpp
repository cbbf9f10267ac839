// The per-lock rules every store follows, against the shared redis-server (port 16379): a retry
// by the same owner gets its own lease back; the group size is a property of the lock; a renew
// sets the server expiry to now + ttl, shorter or longer, as a second client sees it.

#include <thread>

#include "redis_test_util.hpp"

namespace leader::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

LeaseRequest request(const std::string& lock, Duration ttl = 5s, int slots = 0) {
  return LeaseRequest{lock, new_owner_token(), "node-" + std::to_string(::getpid()), ttl, slots};
}

// The server's remaining time to live of `key`, in ms.
long long pttl(const std::string& key) {
  auto db = admin();
  return db ? run(db.get(), "PTTL %s", key.c_str())->integer : -100;
}

// The failed_precondition message of `r`, or "" (with a test failure) when it did not throw one.
std::string precondition_message(LeaseStore& store, const LeaseRequest& r) {
  try {
    auto got = store.try_acquire(r, soon());
    ADD_FAILURE() << "acquired " << (got ? "a lease" : "nothing (contention)")
                  << " instead of failed_precondition";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << e.what();
    return e.what();
  }
  return "";
}

TEST(RedisSameOwner, RetryOfASingleLeaseReturnsItWithItsTokenAndARefreshedExpiry) {
  auto store = leader::open(redis_uri());
  auto lock = unique_lock("same-single");
  auto r = request(lock, 10s);
  auto first = store->try_acquire(r, soon());
  ASSERT_TRUE(first);
  r.ttl = 2s;  // a retry may ask for another ttl: the server expiry is reset to it
  auto again = store->try_acquire(r, soon());
  ASSERT_TRUE(again);
  EXPECT_EQ(again.lease->fencing_token, first.lease->fencing_token);
  EXPECT_EQ(again.lease->slot, 0);
  EXPECT_EQ(again.lease->owner, r.owner);
  EXPECT_LE(pttl("leader:" + lock), 2000);
  r.ttl = 20s;
  ASSERT_TRUE(store->try_acquire(r, soon()));
  EXPECT_GT(pttl("leader:" + lock), 10000);
  EXPECT_EQ(store->release(*again.lease, 0ms, soon()), LeaseStatus::ok);
}

TEST(RedisSameOwner, RetryOfAGroupLeaseReturnsTheSameSlotNeverASecondOne) {
  auto store = leader::open(redis_uri());
  auto lock = unique_lock("same-group");
  ASSERT_TRUE(store->try_acquire(request(lock, 5s, 3), soon()));  // someone else has slot 0
  auto r = request(lock, 5s, 3);
  auto first = store->try_acquire(r, soon());
  ASSERT_TRUE(first);
  EXPECT_EQ(first.lease->slot, 1);
  auto again = store->try_acquire(r, soon());
  ASSERT_TRUE(again);
  EXPECT_EQ(again.lease->slot, 1);
  EXPECT_EQ(again.lease->fencing_token, first.lease->fencing_token);
  EXPECT_EQ(store->inspect(lock, soon()).holders.size(), 2u);  // slot 2 is still free
  ASSERT_TRUE(store->try_acquire(request(lock, 5s, 3), soon()));
  EXPECT_FALSE(store->try_acquire(request(lock, 5s, 3), soon()));
}

TEST(RedisGroupSize, ASingleLeaderAndAGroupRefuseEachOtherWhileHeld) {
  auto store = leader::open(redis_uri());
  auto lock = unique_lock("single-vs-group");
  auto single = store->try_acquire(request(lock), soon());
  ASSERT_TRUE(single);
  auto text = precondition_message(*store, request(lock, 5s, 2));
  EXPECT_NE(text.find("'" + lock + "' is held as a single leader"), std::string::npos) << text;
  EXPECT_NE(text.find("asks for a group of 2 slots"), std::string::npos) << text;
  ASSERT_EQ(store->release(*single.lease, 0ms, soon()), LeaseStatus::ok);
  auto group = store->try_acquire(request(lock, 5s, 2), soon());  // nobody holds it: accepted
  ASSERT_TRUE(group);
  text = precondition_message(*store, request(lock));
  EXPECT_NE(text.find("is held as a group of 2 slots"), std::string::npos) << text;
  EXPECT_NE(text.find("asks for a single leader"), std::string::npos) << text;
  (void)precondition_message(*store, request(lock, 5s, 1));  // a group of 1 is not single
}

TEST(RedisGroupSize, GroupsOfTwoAndThreeRefuseEachOtherSoNeverThreeHolders) {
  auto store = leader::open(redis_uri());
  auto lock = unique_lock("two-vs-three");
  ASSERT_TRUE(store->try_acquire(request(lock, 5s, 2), soon()));
  ASSERT_TRUE(store->try_acquire(request(lock, 5s, 2), soon()));
  auto text = precondition_message(*store, request(lock, 5s, 3));
  EXPECT_NE(text.find("held as a group of 2 slots"), std::string::npos) << text;
  EXPECT_NE(text.find("asks for a group of 3 slots"), std::string::npos) << text;
  EXPECT_EQ(store->inspect(lock, soon()).holders.size(), 2u);
}

TEST(RedisGroupSize, ALargerGroupSeesHoldersOfTheSmallerOneBeyondItsOwnKeys) {
  auto store = leader::open(redis_uri());
  auto lock = unique_lock("three-vs-one");
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store->try_acquire(request(lock, 5s, 3), soon()));
  auto text = precondition_message(*store, request(lock, 5s, 2));
  EXPECT_NE(text.find("held as a group of 3 slots"), std::string::npos) << text;
  (void)precondition_message(*store, request(lock));
}

TEST(RedisGroupSize, ANewSizeIsAcceptedOnceTheOldHoldersExpired) {
  auto store = leader::open(redis_uri());
  auto lock = unique_lock("size-change");
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store->try_acquire(request(lock, 200ms, 3), soon()));
  (void)precondition_message(*store, request(lock, 5s, 2));
  std::this_thread::sleep_for(350ms);  // every holder of the group of 3 expired on the server
  ASSERT_TRUE(store->try_acquire(request(lock, 5s, 2), soon()));
  ASSERT_TRUE(store->try_acquire(request(lock, 5s, 2), soon()));
  EXPECT_FALSE(store->try_acquire(request(lock, 5s, 2), soon()));  // the new size rules
  (void)precondition_message(*store, request(lock, 5s, 3));
  EXPECT_EQ(store->inspect(lock, soon()).holders.size(), 2u);
}

// A renew sets the server expiry to now + ttl, also when that is shorter than before: a second
// client polling with try_acquire gets the lock only after the renew's send time + new ttl.
TEST(RedisRenew, AShortenedLeaseIsFreeForASecondClientAfterTheNewTtl) {
  auto holder = leader::open(redis_uri());
  auto observer = leader::open(redis_uri());
  auto lock = unique_lock("shorten");
  auto got = holder->try_acquire(request(lock, 10s), soon());
  ASSERT_TRUE(got);
  Lease lease = *got.lease;
  const auto sent = Clock::now();
  ASSERT_EQ(holder->renew(lease, 300ms, soon()).status, LeaseStatus::ok);
  Acquired taken;
  while (!taken && Clock::now() - sent < 3s) {
    taken = observer->try_acquire(request(lock), soon());
    if (!taken) std::this_thread::sleep_for(5ms);
  }
  const auto took = Clock::now() - sent;
  ASSERT_TRUE(taken) << "the shortened lease never expired on the server";
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 1s);
}

TEST(RedisRenew, ALengthenedLeaseStaysHeldForTheNewTtl) {
  auto holder = leader::open(redis_uri());
  auto observer = leader::open(redis_uri());
  auto lock = unique_lock("lengthen");
  auto got = holder->try_acquire(request(lock, 200ms), soon());
  ASSERT_TRUE(got);
  Lease lease = *got.lease;
  const auto sent = Clock::now();
  ASSERT_EQ(holder->renew(lease, 1200ms, soon()).status, LeaseStatus::ok);
  Acquired taken;
  while (!taken && Clock::now() - sent < 3s) {
    taken = observer->try_acquire(request(lock), soon());
    if (!taken) std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(taken);
  EXPECT_GE(Clock::now() - sent, 1200ms);
}

}  // namespace
}  // namespace leader::test
