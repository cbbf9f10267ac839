// Group-size rules specific to the redis key layout, against the shared redis-server (port 16379):
// a larger group sees the holders of a smaller one beyond its own keys, and a new size applies
// once the old holders expired. The rules every store shares are in tests/contract.

#include <thread>

#include "redis_test_util.hpp"

namespace leader::test {
namespace {

using namespace std::chrono_literals;

LeaseRequest request(const std::string& lock, Duration ttl = 5s, int slots = 0) {
  return LeaseRequest{lock, new_owner_token(), "node-" + std::to_string(::getpid()), ttl, slots};
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

}  // namespace
}  // namespace leader::test
