// sqlite store safety cases (issue 10): the same owner re-acquiring (decision 1), group size per
// lock (decision 2), and a renewal that sets the expiry to now + ttl, seen by a second client
// (another connection to the same file).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "leader/leader.hpp"
#include "store_safety_cases.hpp"

namespace leader {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class SqliteSafety : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("leader-sqlite-safety-" + std::string(info->name()) + "-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  testing::OpenStore opener() const {
    std::string uri = "sqlite://" + (dir_ / "leader.db").string();
    return [uri] { return open(uri); };
  }

  fs::path dir_;
};

TEST_F(SqliteSafety, TheSameOwnerReacquiresItsSingleLease) {
  testing::same_owner_reacquires_its_single_lease(opener(), "same-single");
}

TEST_F(SqliteSafety, TheSameOwnerReacquiresItsGroupSlot) {
  testing::same_owner_reacquires_its_group_slot(opener(), "same-group");
}

TEST_F(SqliteSafety, ASingleLeaderAndAGroupCannotShareALiveLock) {
  testing::group_size_is_per_lock_single_vs_group(opener(), "single-group");
}

TEST_F(SqliteSafety, GroupsOfTwoAndThreeCannotShareALiveLock) {
  testing::group_size_is_per_lock_two_vs_three(opener(), "two-three");
}

TEST_F(SqliteSafety, ARenewalSetsTheServerExpiryToNowPlusTtl) {
  testing::renew_sets_expiry_to_now_plus_ttl(opener(), "renew-ttl");
}

// A database created by the first layout (fences without `slots`) is migrated in place: leases
// and tokens survive, and the group size applies from then on.
TEST_F(SqliteSafety, AFirstLayoutDatabaseIsMigratedInPlace) {
  const std::string path = (dir_ / "leader.db").string();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const char* first_layout =
      "CREATE TABLE leader_schema (version INTEGER NOT NULL);"
      "INSERT INTO leader_schema VALUES (1);"
      "CREATE TABLE leader_leases (lock_name VARCHAR(255) NOT NULL, slot INTEGER NOT NULL,"
      " owner CHAR(32) NOT NULL, node_id VARCHAR(255) NOT NULL, fencing_token BIGINT NOT NULL,"
      " acquired_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, PRIMARY KEY (lock_name, slot));"
      "CREATE TABLE leader_fences (lock_name VARCHAR(255) NOT NULL PRIMARY KEY,"
      " last_token BIGINT NOT NULL);"
      "CREATE TABLE leader_candidates (group_name VARCHAR(255) NOT NULL,"
      " node_id VARCHAR(255) NOT NULL, registered_at INTEGER NOT NULL,"
      " expires_at INTEGER NOT NULL, successes BIGINT NOT NULL DEFAULT 0,"
      " failures BIGINT NOT NULL DEFAULT 0, last_completion INTEGER NULL,"
      " metadata TEXT NOT NULL DEFAULT '{}', PRIMARY KEY (group_name, node_id));"
      "INSERT INTO leader_fences VALUES ('old', 41);"
      "INSERT INTO leader_leases VALUES ('old', 0, '0123456789abcdef0123456789abcdef', 'n', 41,"
      " 0, CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) + 60000);";
  ASSERT_EQ(sqlite3_exec(db, first_layout, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);

  auto store = opener()();
  auto state = store->inspect("old", testing::safety_deadline());
  ASSERT_EQ(state.holders.size(), 1u) << "the lease of the first layout was lost";
  EXPECT_EQ(state.holders[0].fencing_token, 41u);
  // Its size is unknown (NULL, as written by an earlier release): no request is refused for its
  // size, so a second single leader contends.
  EXPECT_FALSE(store->try_acquire(testing::safety_request("old", 5s), testing::safety_deadline()));
  auto fresh =
      store->try_acquire(testing::safety_request("new", 5s, 2), testing::safety_deadline());
  ASSERT_TRUE(fresh);
  EXPECT_THROW(
      (void)store->try_acquire(testing::safety_request("new", 5s), testing::safety_deadline()),
      BackendError);
  auto reopened = open("sqlite://" + path + "?create_schema=false");
  EXPECT_EQ(reopened->inspect("new", testing::safety_deadline()).holders.size(), 1u);
}

}  // namespace
}  // namespace leader
