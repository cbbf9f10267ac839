// MariaDB store cases beyond the contract suite, against the real server:
// a server restart while holding, concurrent first starts creating the schema once, URI options
// and errors (skewed client clocks and a killed holder are contract cases).
#include <gtest/gtest.h>
#include <mysql.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <filesystem>

#include "leader/leader.hpp"
#include "sql_store_cases.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;

std::string base_uri() {
  const char* v = std::getenv("LEADER_TEST_MYSQL_URI");
  return v && *v ? v : "mysql://root@127.0.0.1:13306/leader_test";
}
std::string with(const std::string& uri, const std::string& param) {
  return uri + (uri.find('?') == std::string::npos ? "?" : "&") + param;
}
std::string uri() { return with(base_uri(), "table_prefix=myit_"); }
std::string unique(const std::string& what) {
  return "myit-" + what + "-" + std::to_string(getpid()) + "-" + std::to_string(std::time(nullptr));
}
Deadline soon() { return Deadline::after(5s); }
LeaseRequest request(const std::string& lock, Duration ttl, int slots = 0) {
  return {lock, new_owner_token(), "it-node", ttl, slots};
}

// Runs SQL directly (test bookkeeping only); returns the first value or "".
std::string sql(const std::string& text) {
  MYSQL* m = mysql_init(nullptr);
  std::string out;
  if (mysql_real_connect(m, "127.0.0.1", "root", nullptr, "leader_test", 13306, nullptr, 0)) {
    if (mysql_query(m, text.c_str()) == 0) {
      if (MYSQL_RES* res = mysql_store_result(m)) {
        if (MYSQL_ROW row = mysql_fetch_row(res)) out = row[0] ? row[0] : "";
        mysql_free_result(res);
      }
    }
  }
  mysql_close(m);
  return out;
}

void drop_tables(const std::string& prefix) {
  sql("DROP TABLE IF EXISTS " + prefix + "schema, " + prefix + "leases, " + prefix + "fences, " +
      prefix + "candidates");
  sql("DROP PROCEDURE IF EXISTS " + prefix + "acquire");
  sql("DROP PROCEDURE IF EXISTS " + prefix + "acquire_v2");
}

// Restarts the server of scripts/test-servers.sh (or LEADER_TEST_MYSQL_RESTART), in its own
// session (setsid) so that it outlives this test process group.
bool restart_server() {
  if (const char* cmd = std::getenv("LEADER_TEST_MYSQL_RESTART")) return std::system(cmd) == 0;
  const std::string pidfile = "/tmp/le-test/pids/mariadb.pid";
  if (!std::filesystem::exists(pidfile)) return false;
  std::string cmd = "pid=$(cat " + pidfile +
                    ") && kill -TERM $pid && while kill -0 $pid 2>/dev/null; do sleep 0.05; done"
                    " && setsid " LEADER_SOURCE_DIR
                    "/scripts/test-servers.sh start mariadb </dev/null >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

testing::SqlServer server() {
  return {.uri = uri,
          .with_prefix = [](const std::string& p) { return with(base_uri(), "table_prefix=" + p); },
          .sql = sql,
          .drop_tables = drop_tables,
          .restart = restart_server};
}

TEST(MysqlStore, ServerRestartWhileHoldingKeepsTheLeaseAndReconnects) {
  testing::check_restart_keeps_the_lease(server(), unique("restart"));
}

TEST(MysqlStore, TwentyConcurrentFirstStartsCreateTheSchemaOnce) {
  testing::check_concurrent_first_starts(server(), "myfs" + std::to_string(getpid()) + "_");
}

TEST(MysqlStore, CreateSchemaFalseReportsMissingTablesAsFailedPrecondition) {
  const std::string prefix = "myno" + std::to_string(getpid()) + "_";
  testing::check_create_schema_false(
      server(), prefix,
      "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = '" + prefix + "leases'",
      "0");
}

TEST(MysqlStore, UriOptionsAreValidated) {
  EXPECT_THROW(open(with(base_uri(), "table_prefix=bad-prefix")), InvalidArgument);
  EXPECT_THROW(open(with(base_uri(), "table_prefix=0abc")), InvalidArgument);
  EXPECT_THROW(open(with(base_uri(), "pool_size=0")), InvalidArgument);
  EXPECT_THROW(open(with(base_uri(), "no_such_option=1")), InvalidArgument);
  EXPECT_THROW(open("mysql://root@127.0.0.1:13306"), InvalidArgument);  // no database
  EXPECT_THROW(open("mysql://root@a:1,b:2/db"), InvalidArgument);
  auto store = open(with(uri(), "connect_timeout=3s&statement_timeout=5s&pool_size=2"));
  EXPECT_FALSE(store->inspect(unique("opts"), soon()).held());
  auto maria = open("mariadb://root@127.0.0.1:13306/leader_test?table_prefix=myit_");
  EXPECT_FALSE(maria->inspect(unique("opts"), soon()).held());
}

TEST(MysqlStore, PrefixAndItsDeprecatedSpellingTablePrefixNameTheSameTables) {
  const std::string name = unique("alias");
  auto canonical = open(with(base_uri(), "prefix=myit_"));
  auto old = open(with(base_uri(), "table_prefix=myit_"));
  auto mine = canonical->try_acquire(request(name, 10s), soon());
  ASSERT_TRUE(mine.lease);
  EXPECT_TRUE(old->inspect(name, soon()).held());
  EXPECT_EQ(canonical->release(*mine.lease, Duration{0}, soon()), LeaseStatus::ok);
  EXPECT_THROW(open(with(base_uri(), "prefix=a_&table_prefix=b_")), InvalidArgument);
}

TEST(MysqlStore, RequiredTlsAgainstAServerWithoutTlsIsAnError) {
  auto store = open(with(uri(), "tls=true"));
  EXPECT_THROW((void)store->inspect("x", soon()), BackendError);
}

TEST(MysqlStore, LockNamesAreCaseSensitive) {
  const auto name = unique("Case");
  auto store = open(uri());
  auto upper = store->try_acquire(request(name, 30s), soon());
  ASSERT_TRUE(upper);
  std::string lower = name;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto other = store->try_acquire(request(lower, 30s), soon());
  EXPECT_TRUE(other) << "'" << name << "' and '" << lower << "' collided";
}

TEST(MysqlStore, UnreachableServerIsUnavailableAndThePasswordStaysSecret) {
  auto store = open("mysql://root:s3cr3t-pw@127.0.0.1:1/leader_test");
  try {
    (void)store->inspect("x", soon());
    FAIL() << "no error";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::unavailable) << e.what();
    EXPECT_EQ(std::string(e.what()).find("s3cr3t"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace leader
