// A private dynalite (LevelDB data on disk, port 18011) crashes (SIGKILL) and comes back while a
// lease is held: calls during the outage fail as unavailable, the same store reconnects, the
// holder keeps its lease, and fencing tokens keep increasing.

#include <gtest/gtest.h>

#include "dynamodb_test_util.hpp"
#include "leader/leader.hpp"

namespace leader::dynamodb {
namespace {

using Ms = std::chrono::milliseconds;

Deadline soon() { return Deadline::after(Ms{5000}); }

LeaseRequest request(const std::string& lock, Ms ttl) {
  return LeaseRequest{lock, new_owner_token(), "restart-node", ttl, 0};
}

TEST(DynamoDbRestart, AHeldLeaseSurvivesADynaliteRestartAndTheStoreReconnects) {
  if (!test::Dynalite::available())
    GTEST_SKIP() << "dynalite is not installed (LEADER_TEST_DYNALITE_BIN)";
  test::Dynalite server(18011);
  auto holder = test::open_store(server.uri("leader_restart"));
  auto other = test::open_store(server.uri("leader_restart"));
  auto held = holder->try_acquire(request("restart", Ms{10000}), soon());
  ASSERT_TRUE(held);
  Lease lease = *held.lease;

  server.kill();
  try {
    (void)holder->renew(lease, Ms{10000}, Deadline::after(Ms{1000}));
    ADD_FAILURE() << "renewed while dynalite was down";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::unavailable) << e.what();
  }
  server.start();

  EXPECT_EQ(holder->renew(lease, Ms{10000}, soon()).status,
            LeaseStatus::ok);  // same store, reconnected
  EXPECT_FALSE(other->try_acquire(request("restart", Ms{10000}), soon()));
  auto state = other->inspect("restart", soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].fencing_token, lease.fencing_token);
  EXPECT_EQ(holder->release(lease, Ms{0}, soon()), LeaseStatus::ok);
  auto next = other->try_acquire(request("restart", Ms{10000}), soon());
  ASSERT_TRUE(next);
  EXPECT_GT(next.lease->fencing_token, lease.fencing_token);
  EXPECT_EQ(other->release(*next.lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(DynamoDbRestart, AStoreOpenedWhileDynaliteIsDownFailsAndANewOneWorksAfter) {
  if (!test::Dynalite::available())
    GTEST_SKIP() << "dynalite is not installed (LEADER_TEST_DYNALITE_BIN)";
  test::Dynalite server(18011);
  server.kill();
  try {
    (void)open(server.uri("leader_restart") + "&open_timeout=1s");
    ADD_FAILURE() << "opened while dynalite was down";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::unavailable) << e.what();
  }
  server.start();
  auto s = open(server.uri("leader_restart"));
  auto got = s->try_acquire(request("after", Ms{5000}), soon());
  ASSERT_TRUE(got);
  EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
}

}  // namespace
}  // namespace leader::dynamodb
