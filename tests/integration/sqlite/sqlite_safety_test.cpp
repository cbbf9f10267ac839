// sqlite store safety cases beyond the contract suite (tests/contract/ownership_test.cpp and
// store_test.cpp hold the same-owner, group-size and renewal cases): a database of the first
// layout is migrated in place.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "leader/leader.hpp"

namespace leader {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

Deadline soon() { return Deadline::after(5s); }
LeaseRequest request(const std::string& lock, Duration ttl, int slots = 0) {
  return {lock, new_owner_token(), "safety-node", ttl, slots};
}

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

  fs::path dir_;
};

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

  auto store = open("sqlite://" + path);
  auto state = store->inspect("old", soon());
  ASSERT_EQ(state.holders.size(), 1u) << "the lease of the first layout was lost";
  EXPECT_EQ(state.holders[0].fencing_token, 41u);
  // Its size is unknown (NULL, as written by an earlier release): no request is refused for its
  // size, so a second single leader contends.
  EXPECT_FALSE(store->try_acquire(request("old", 5s), soon()));
  auto fresh = store->try_acquire(request("new", 5s, 2), soon());
  ASSERT_TRUE(fresh);
  EXPECT_THROW((void)store->try_acquire(request("new", 5s), soon()), BackendError);
  auto reopened = open("sqlite://" + path + "?create_schema=false");
  EXPECT_EQ(reopened->inspect("new", soon()).holders.size(), 1u);
}

}  // namespace
}  // namespace leader
