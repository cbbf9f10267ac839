// sqlite-specific behaviour: concurrent schema creation by many processes, create_schema=false,
// URI errors, table prefixes, unwritable locations, lock waits past the deadline, and fencing
// tokens across processes. Every case uses its own database file under the temp directory.

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "leader/leader.hpp"

namespace leader {
namespace {

namespace fs = std::filesystem;

class SqliteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("leader-sqlite-" + std::string(info->name()) + "-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::permissions(dir_, fs::perms::owner_all);
    fs::remove_all(dir_);
  }
  std::string path(const std::string& name = "leader.db") const { return (dir_ / name).string(); }
  std::string uri(const std::string& query = "") const {
    return "sqlite://" + path() + (query.empty() ? "" : "?" + query);
  }

  fs::path dir_;
};

LeaseRequest request(const std::string& lock, int slots = 0, Duration ttl = 5s) {
  return LeaseRequest{lock, new_owner_token(), "node-" + std::to_string(getpid()), ttl, slots};
}

// One value of a single-value query on a raw connection.
std::string query_one(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open(db_path.c_str(), &db);
  std::string out;
  sqlite3_exec(
      db, sql.c_str(),
      [](void* o, int, char** values, char**) {
        *static_cast<std::string*>(o) = values[0] ? values[0] : "NULL";
        return 0;
      },
      &out, nullptr);
  sqlite3_close(db);
  return out;
}

template <class Fn>
BackendError backend_error_of(Fn&& fn) {
  try {
    fn();
  } catch (const BackendError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a BackendError";
  return BackendError(ErrorCode::internal, "none", "no error");
}

TEST_F(SqliteTest, TwentyFirstTimeProcessesCreateTheSchemaExactlyOnce) {
  int gate[2];
  ASSERT_EQ(pipe(gate), 0);
  std::vector<test::ChildProcess> children;
  for (int i = 0; i < 20; ++i) {
    children.push_back(test::ChildProcess::fork([&, i] {
      close(gate[1]);
      char c;
      (void)read(gate[0], &c, 1);  // returns when the parent closes the pipe: all start together
      auto store = open(uri());
      auto got = store->try_acquire(request("start-" + std::to_string(i)), Deadline::after(10s));
      return got ? 0 : 1;
    }));
  }
  close(gate[0]);
  close(gate[1]);
  for (auto& child : children) EXPECT_EQ(child.wait(), 0);
  EXPECT_EQ(query_one(path(), "SELECT count(*) FROM leader_schema"), "1");
  EXPECT_EQ(query_one(path(), "SELECT version FROM leader_schema"), "2");
  EXPECT_EQ(query_one(path(), "SELECT count(*) FROM leader_boots"), "1");
  EXPECT_EQ(query_one(path(), "SELECT count(*) FROM leader_leases"), "20");
  EXPECT_EQ(query_one(path(), "PRAGMA journal_mode"), "wal");
}

TEST_F(SqliteTest, CreateSchemaFalseOnAnEmptyFileNamesTheMissingTable) {
  auto e = backend_error_of([&] { (void)open(uri("create_schema=false")); });
  EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
  EXPECT_NE(std::string(e.what()).find("leader_schema"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("docs/sql-schema.md"), std::string::npos) << e.what();
}

TEST_F(SqliteTest, CreateSchemaFalseUsesAnExistingSchema) {
  (void)open(uri());
  auto store = open(uri("create_schema=false"));
  EXPECT_TRUE(store->try_acquire(request("job"), Deadline::after(2s)));
}

TEST_F(SqliteTest, CreateSchemaFalseNamesAPartlyMissingSchema) {
  (void)open(uri());
  query_one(path(), "DROP TABLE leader_fences");
  auto e = backend_error_of([&] { (void)open(uri("create_schema=false")); });
  EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
  EXPECT_NE(std::string(e.what()).find("leader_fences"), std::string::npos) << e.what();
}

TEST_F(SqliteTest, AnUnknownSchemaVersionIsAPrecondition) {
  (void)open(uri());
  query_one(path(), "UPDATE leader_schema SET version = 3");
  auto e = backend_error_of([&] { (void)open(uri()); });
  EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
  EXPECT_NE(std::string(e.what()).find("version 3"), std::string::npos) << e.what();
}

// Expiry is on the host's boot clock (schema 2), not its wall clock: a schema-1 database (expiry
// in wall-clock milliseconds) is upgraded in place and its live lease stays live, for as long as
// it had left.
TEST_F(SqliteTest, ASchemaOneDatabaseIsUpgradedAndItsLiveLeaseStaysLive) {
  (void)open(uri());
  const std::string wall_now =
      "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";
  query_one(path(), "DROP TABLE leader_boots");
  query_one(path(), "UPDATE leader_schema SET version = 1");
  query_one(path(),
            "INSERT INTO leader_fences (lock_name, last_token, slots) VALUES ('old', 7, 0)");
  query_one(path(), "INSERT INTO leader_leases VALUES ('old', 0, '" + std::string(32, 'a') +
                        "', 'old-node', 7, " + wall_now + ", " + wall_now + " + 60000)");
  auto store = open(uri());
  EXPECT_EQ(query_one(path(), "SELECT version FROM leader_schema"), "2");
  auto state = store->inspect("old", Deadline::after(2s));
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].node_id, "old-node");
  EXPECT_GT(state.holders[0].expires_in, 55s);
  EXPECT_LE(state.holders[0].expires_in, 60s);
  EXPECT_FALSE(store->try_acquire(request("old"), Deadline::after(2s)));
}

// A lease written during an earlier boot of the host is expired: its holder died with that boot
// (a new boot is simulated by renaming this boot's registration to another boot id).
TEST_F(SqliteTest, ALeaseOfAnEarlierBootIsExpired) {
  auto first = open(uri());
  auto held = first->try_acquire(request("boot", 0, std::chrono::hours(1)), Deadline::after(2s));
  ASSERT_TRUE(held);
  auto other = open(uri());
  EXPECT_FALSE(other->try_acquire(request("boot"), Deadline::after(2s)));
  query_one(path(), "UPDATE leader_boots SET boot_id = 'an-earlier-boot'");
  auto after_reboot = open(uri());
  auto got = after_reboot->try_acquire(request("boot"), Deadline::after(2s));
  ASSERT_TRUE(got) << "a lease of an earlier boot was still live";
  EXPECT_GT(got.lease->fencing_token, held.lease->fencing_token);
}

TEST_F(SqliteTest, BadUrisAreInvalidArguments) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sqlite::memory:", "in-memory"},
      {"sqlite:", "names no database file"},
      {"sqlite://localhost/tmp/x.db", "no host"},
      {"sqlite://user:secret@/tmp/x.db", "no host or user"},
      {"sqlite:///tmp/x.db?journal=wal", "unknown parameter 'journal'"},
      {"sqlite:///tmp/x.db?table_prefix=1abc", "^[A-Za-z_][A-Za-z0-9_]{0,30}$"},
      {"sqlite:///tmp/x.db?table_prefix=a-b", "'a-b'"},
      {"sqlite:///tmp/x.db?table_prefix=", "table_prefix"},
      {"sqlite:///tmp/x.db?table_prefix=" + std::string(32, 'a'), "table_prefix"},
      {"sqlite:///tmp/x.db?table_prefix=x%3Bdrop", "table_prefix"},
      {"sqlite:///tmp/x.db?busy_timeout=soon", "busy_timeout"},
      {"sqlite:///tmp/x.db?create_schema=maybe", "create_schema"},
  };
  for (const auto& [text, fragment] : cases) {
    try {
      (void)open(text);
      ADD_FAILURE() << text << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
          << text << " -> " << e.what();
      EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos) << e.what();
    }
  }
}

TEST_F(SqliteTest, AcceptsRelativeAndAbsolutePathForms) {
  const auto cwd = fs::current_path();
  fs::current_path(dir_);
  EXPECT_TRUE(open("sqlite:relative.db")->try_acquire(request("job"), Deadline::after(2s)));
  fs::current_path(cwd);
  EXPECT_TRUE(fs::exists(dir_ / "relative.db"));
  EXPECT_TRUE(
      open("sqlite:" + path("single-slash.db"))->try_acquire(request("job"), Deadline::after(2s)));
  EXPECT_TRUE(open("sqlite://" + path("triple-slash.db"))
                  ->try_acquire(request("job"), Deadline::after(2s)));
}

TEST_F(SqliteTest, TablePrefixesKeepSeparateLeasesInOneFile) {
  auto a = open(uri("table_prefix=app_a_"));
  auto b = open(uri("table_prefix=AppB"));
  EXPECT_TRUE(a->try_acquire(request("job"), Deadline::after(2s)));
  EXPECT_TRUE(b->try_acquire(request("job"), Deadline::after(2s)));
  EXPECT_FALSE(open(uri("table_prefix=app_a_"))->try_acquire(request("job"), Deadline::after(2s)));
  EXPECT_EQ(query_one(path(), "SELECT count(*) FROM app_a_leases"), "1");
  EXPECT_EQ(query_one(path(), "SELECT count(*) FROM AppBfences"), "1");
  EXPECT_EQ(query_one(path(), "SELECT count(*) FROM sqlite_master WHERE name LIKE 'leader_%'"),
            "0");
}

TEST_F(SqliteTest, AFileInANonWritableDirectoryIsAPreconditionNamingThePath) {
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                            fs::perms::group_exec | fs::perms::others_read |
                            fs::perms::others_exec);
  const std::string target = path("cannot-create.db");
  // root ignores permissions: the check runs as an unprivileged user in a child process.
  auto child = test::ChildProcess::fork([&] {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) return 3;
    try {
      (void)open("sqlite://" + target);
      return 1;
    } catch (const BackendError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      bool named = std::string(e.what()).find(target) != std::string::npos;
      return e.code() == ErrorCode::failed_precondition && named ? 0 : 2;
    }
  });
  EXPECT_EQ(child.wait(), 0);
}

TEST_F(SqliteTest, AMissingDirectoryIsAPreconditionNamingThePath) {
  const std::string target = path("missing/dir/x.db");
  auto e = backend_error_of([&] { (void)open("sqlite://" + target); });
  EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
  EXPECT_NE(std::string(e.what()).find(target), std::string::npos) << e.what();
}

// A raw connection holding the database's write lock (in WAL mode readers still proceed).
class ExclusiveLock {
 public:
  explicit ExclusiveLock(const std::string& path) {
    sqlite3_open(path.c_str(), &db_);
    EXPECT_EQ(sqlite3_exec(db_, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  }
  ~ExclusiveLock() {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
  }
  ExclusiveLock(const ExclusiveLock&) = delete;
  ExclusiveLock& operator=(const ExclusiveLock&) = delete;

 private:
  sqlite3* db_ = nullptr;
};

TEST_F(SqliteTest, ALockHeldPastTheDeadlineIsDeadlineExceeded) {
  auto store = open(uri());
  auto held = store->try_acquire(request("job"), Deadline::after(2s));
  ASSERT_TRUE(held);
  Lease lease = *held.lease;
  ExclusiveLock lock(path());
  auto e =
      backend_error_of([&] { (void)store->try_acquire(request("job"), Deadline::after(200ms)); });
  EXPECT_EQ(e.code(), ErrorCode::deadline_exceeded) << e.what();
  e = backend_error_of([&] { (void)store->renew(lease, 2s, Deadline::after(100ms)); });
  EXPECT_EQ(e.code(), ErrorCode::deadline_exceeded) << e.what();
  EXPECT_EQ(store->inspect("job", Deadline::after(100ms)).holders.size(), 1u);  // WAL: reads go on
}

TEST_F(SqliteTest, AThreadWaitingForTheSharedConnectionGivesUpAtItsDeadline) {
  auto store = open(uri());
  ExclusiveLock lock(path());
  std::thread slow([&] {  // holds the store's connection while it waits for the file lock
    auto e = backend_error_of(
        [&] { (void)store->try_acquire(request("slow"), Deadline::after(1500ms)); });
    EXPECT_EQ(e.code(), ErrorCode::deadline_exceeded) << e.what();
  });
  std::this_thread::sleep_for(200ms);
  auto e = backend_error_of([&] { (void)store->inspect("job", Deadline::after(100ms)); });
  EXPECT_EQ(e.code(), ErrorCode::deadline_exceeded) << e.what();
  EXPECT_NE(std::string(e.what()).find("before it could start"), std::string::npos) << e.what();
  slow.join();
}

TEST_F(SqliteTest, ALockHeldPastBusyTimeoutIsUnavailable) {
  auto store = open(uri("busy_timeout=100ms"));
  ExclusiveLock lock(path());
  auto e = backend_error_of([&] { (void)store->try_acquire(request("job"), Deadline::after(5s)); });
  EXPECT_EQ(e.code(), ErrorCode::unavailable) << e.what();
}

TEST_F(SqliteTest, AStoreOpenedDuringALockWorksOnceItIsReleased) {
  std::shared_ptr<LeaseStore> store;
  (void)open(uri("table_prefix=first_"));  // the file exists, its leader_ tables do not
  {
    ExclusiveLock lock(path());
    store = open(uri("busy_timeout=50ms"));
  }
  EXPECT_TRUE(store->try_acquire(request("job"), Deadline::after(2s)));
}

TEST_F(SqliteTest, TokensOfTwoProcessesAreDistinctIncreasingAndDense) {
  (void)open(uri());
  constexpr int kRounds = 150;
  std::vector<test::ChildProcess> children;
  std::vector<std::string> logs = {path("tokens-0.txt"), path("tokens-1.txt")};
  for (const auto& log : logs) {
    children.push_back(test::ChildProcess::fork([&] {
      auto store = open(uri());
      FILE* out = std::fopen(log.c_str(), "w");
      std::uint64_t last = 0;
      for (int granted = 0; granted < kRounds;) {
        auto got = store->try_acquire(request("shared"), Deadline::after(5s));
        if (!got) continue;
        if (got.lease->fencing_token <= last) return 1;
        last = got.lease->fencing_token;
        std::fprintf(out, "%llu\n", static_cast<unsigned long long>(last));
        (void)store->release(*got.lease, Duration{0}, Deadline::after(5s));
        ++granted;
      }
      std::fclose(out);
      return 0;
    }));
  }
  for (auto& child : children) EXPECT_EQ(child.wait(), 0);
  std::set<unsigned long long> all;
  for (const auto& log : logs) {
    FILE* in = std::fopen(log.c_str(), "r");
    unsigned long long t = 0;
    while (in && std::fscanf(in, "%llu", &t) == 1) EXPECT_TRUE(all.insert(t).second) << t;
    if (in) std::fclose(in);
  }
  ASSERT_EQ(all.size(), 2u * kRounds);
  EXPECT_EQ(*all.begin(), 1u);  // only granted acquisitions consume a token
  EXPECT_EQ(*all.rbegin(), 2u * kRounds);
}

TEST_F(SqliteTest, PrefixAndItsDeprecatedSpellingTablePrefixNameTheSameTables) {
  auto canonical = open(uri("prefix=app_c_"));
  EXPECT_TRUE(canonical->try_acquire(request("job"), Deadline::after(2s)));
  EXPECT_FALSE(open(uri("table_prefix=app_c_"))->try_acquire(request("job"), Deadline::after(2s)));
  EXPECT_EQ(query_one(path(), "SELECT count(*) FROM app_c_leases"), "1");
  try {
    (void)open(uri("prefix=a_&table_prefix=b_"));
    ADD_FAILURE() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'table_prefix' and 'prefix'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace leader
