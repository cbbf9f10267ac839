// PostgreSQL store cases beyond the contract suite, against the real server:
// a server restart while holding, concurrent first starts creating the schema once, URI options
// and errors (skewed client clocks and a killed holder are contract cases).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>

#include "leader/leader.hpp"
#include "sql_store_cases.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;

std::string base_uri() {
  const char* v = std::getenv("LEADER_TEST_POSTGRES_URI");
  return v && *v ? v : "postgresql://postgres@127.0.0.1:15432/leader_test";
}
std::string with(const std::string& uri, const std::string& param) {
  return uri + (uri.find('?') == std::string::npos ? "?" : "&") + param;
}
std::string uri() { return with(base_uri(), "table_prefix=pgit_"); }
std::string unique(const std::string& what) {
  return "pgit-" + what + "-" + std::to_string(getpid()) + "-" + std::to_string(std::time(nullptr));
}
Deadline soon() { return Deadline::after(5s); }
LeaseRequest request(const std::string& lock, Duration ttl, int slots = 0) {
  return {lock, new_owner_token(), "it-node", ttl, slots};
}

// Runs SQL directly (test bookkeeping only); returns the first value or "".
std::string sql(const std::string& text) {
  PGconn* c = PQconnectdb(base_uri().c_str());
  std::string out;
  if (PQstatus(c) == CONNECTION_OK) {
    PGresult* r = PQexec(c, text.c_str());
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
    PQclear(r);
  }
  PQfinish(c);
  return out;
}

void drop_tables(const std::string& prefix) {
  sql("DROP TABLE IF EXISTS " + prefix + "schema, " + prefix + "leases, " + prefix + "fences, " +
      prefix + "candidates");
}

// Marks every descriptor above stderr close-on-exec. The test runs under
// `flock /tmp/leader-servers.lock ctest ...`: a server restarted with that descriptor inherited
// holds the shared lock for every engineer until its next restart (seen at 01:13 on 2026-12-01).
void close_descriptors_on_exec() {
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(entry.path().filename().c_str());
    if (fd > 2) (void)fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
  }
}

// Restarts the server of scripts/test-servers.sh (or LEADER_TEST_POSTGRES_RESTART).
bool restart_server() {
  close_descriptors_on_exec();
  if (const char* cmd = std::getenv("LEADER_TEST_POSTGRES_RESTART")) return std::system(cmd) == 0;
  const std::string data = "/tmp/le-test/pg/data";
  if (!std::filesystem::exists(data)) return false;
  // setsid: the restarted server must not belong to this test's session or process group.
  std::string as_pg = getuid() == 0 ? "runuser -u postgres -- " : "";
  std::string cmd =
      "setsid " + as_pg + "/usr/lib/postgresql/15/bin/pg_ctl -D " + data +
      " -l /tmp/le-test/pg/postgres.log -w -m fast restart </dev/null >/dev/null && head -1 " +
      data + "/postmaster.pid > /tmp/le-test/pids/postgres.pid";
  return std::system(cmd.c_str()) == 0;
}

testing::SqlServer server() {
  return {.uri = uri,
          .with_prefix = [](const std::string& p) { return with(base_uri(), "table_prefix=" + p); },
          .sql = sql,
          .drop_tables = drop_tables,
          .restart = restart_server};
}

TEST(PostgresStore, ServerRestartWhileHoldingKeepsTheLeaseAndReconnects) {
  testing::check_restart_keeps_the_lease(server(), unique("restart"));
}

TEST(PostgresStore, TwentyConcurrentFirstStartsCreateTheSchemaOnce) {
  testing::check_concurrent_first_starts(server(), "pgfs" + std::to_string(getpid()) + "_");
}

TEST(PostgresStore, CreateSchemaFalseReportsMissingTablesAsFailedPrecondition) {
  const std::string prefix = "pgno" + std::to_string(getpid()) + "_";
  testing::check_create_schema_false(server(), prefix,
                                     "SELECT to_regclass('" + prefix + "leases') IS NULL", "t");
}

TEST(PostgresStore, UriOptionsAreValidatedAndLibpqOptionsStillWork) {
  EXPECT_THROW(open(with(base_uri(), "table_prefix=bad-prefix")), InvalidArgument);
  EXPECT_THROW(open(with(base_uri(), "table_prefix=0abc")), InvalidArgument);
  EXPECT_THROW(open(with(base_uri(), "pool_size=0")), InvalidArgument);
  EXPECT_THROW(open(with(base_uri(), "no_such_option=1")), InvalidArgument);
  auto store = open(with(uri(), "application_name=leader-it&sslmode=disable&connect_timeout=3"));
  EXPECT_FALSE(store->inspect(unique("opts"), soon()).held());
  EXPECT_THROW(open("postgres://postgres@127.0.0.1:15432/leader_test?table_prefix=x;drop"),
               InvalidArgument);
}

TEST(PostgresStore, PrefixAndItsDeprecatedSpellingTablePrefixNameTheSameTables) {
  const std::string name = unique("alias");
  auto canonical = open(with(base_uri(), "prefix=pgit_"));
  auto old = open(with(base_uri(), "table_prefix=pgit_"));
  auto mine = canonical->try_acquire(request(name, 10s), soon());
  ASSERT_TRUE(mine.lease);
  EXPECT_TRUE(old->inspect(name, soon()).held());
  EXPECT_EQ(canonical->release(*mine.lease, Duration{0}, soon()), LeaseStatus::ok);
  EXPECT_THROW(open(with(base_uri(), "prefix=a_&table_prefix=b_")), InvalidArgument);
}

TEST(PostgresStore, UnreachableServerIsUnavailableAndThePasswordStaysSecret) {
  auto store = open("postgresql://postgres:s3cr3t-pw@127.0.0.1:1/leader_test");
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
