// PostgreSQL store safety cases judged by the server (issue 10): a renew delayed on a row lock
// racing a contender, and schema migration. The same-owner, group-size and renewal cases every
// store shares are in tests/contract (ownership_test.cpp, store_test.cpp).
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <future>
#include <string>
#include <thread>

#include "leader/leader.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string base_uri() {
  const char* v = std::getenv("LEADER_TEST_POSTGRES_URI");
  return v && *v ? v : "postgresql://postgres@127.0.0.1:15432/leader_test";
}
std::string uri() {
  return base_uri() + (base_uri().find('?') == std::string::npos ? "?" : "&") +
         "table_prefix=pgsafe_";
}
std::string unique(const std::string& what) {
  return "pgsafe-" + what + "-" + std::to_string(getpid()) + "-" +
         std::to_string(std::time(nullptr));
}
Deadline soon() { return Deadline::after(5s); }

/// A plain client session for test bookkeeping (holding row locks, watching lock waits).
class RawSession {
 public:
  RawSession() : c_(PQconnectdb(base_uri().c_str())) {
    if (PQstatus(c_) != CONNECTION_OK)
      throw std::runtime_error(std::string("raw connect: ") + PQerrorMessage(c_));
  }
  ~RawSession() { PQfinish(c_); }
  RawSession(const RawSession&) = delete;
  RawSession& operator=(const RawSession&) = delete;

  /// Runs `text`; returns the first value of the first row ("" when none).
  std::string run(const std::string& text) {
    PGresult* r = PQexec(c_, text.c_str());
    const auto status = PQresultStatus(r);
    std::string out;
    if (status == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
    PQclear(r);
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)
      throw std::runtime_error(text + ": " + PQerrorMessage(c_));
    return out;
  }

 private:
  PGconn* c_;
};

/// Waits until `n` sessions running a statement on `table` wait for a lock.
bool wait_for_lock_waiters(RawSession& observer, const std::string& table, int n) {
  const auto until = Clock::now() + 5s;
  while (Clock::now() < until) {
    auto count = observer.run(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%" +
        table + "%'");
    if (std::stoi(count) >= n) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

// The interleaving of defect 2 (found on MariaDB), checked here too: the holder's renew is sent
// before expiry and waits on the lease row (a third session holds it FOR UPDATE); a contender
// arrives after expiry and waits as well. When the row lock goes, never both succeed.
TEST(PostgresSafety, ARenewDelayedOnTheRowAndAContenderNeverBothSucceed) {
  for (int slots : {0, 2}) {
    const auto name = unique("race" + std::to_string(slots));
    auto holder_store = open(uri());
    auto contender_store = open(uri());
    (void)contender_store->inspect(name, soon());  // connected and prepared before the race
    const auto ttl = 1500ms;
    const auto sent = Clock::now();
    auto got = holder_store->try_acquire({name, new_owner_token(), "holder", ttl, slots}, soon());
    ASSERT_TRUE(got);
    Lease lease = *got.lease;
    if (slots > 0) {  // fill the other slot so that the contender needs the holder's one
      ASSERT_TRUE(
          holder_store->try_acquire({name, new_owner_token(), "other", 30s, slots}, soon()));
    }
    RawSession third, observer;
    third.run("BEGIN");
    third.run("SELECT count(*) FROM (SELECT 1 FROM pgsafe_leases WHERE lock_name = '" + name +
              "' AND slot = 0 FOR UPDATE) l");
    auto renewed = std::async(std::launch::async, [&] {
      return holder_store->renew(lease, 10s, Deadline::after(20s)).status;
    });
    ASSERT_TRUE(wait_for_lock_waiters(observer, "pgsafe_leases", 1)) << "the renew never waited";
    std::this_thread::sleep_until(sent + ttl + 200ms);  // the lease is expired on the server
    auto contended = std::async(std::launch::async, [&] {
      return contender_store->try_acquire({name, new_owner_token(), "contender", 10s, slots},
                                          Deadline::after(20s));
    });
    ASSERT_TRUE(wait_for_lock_waiters(observer, "pgsafe_", 2)) << "the contender never waited";
    third.run("COMMIT");
    const LeaseStatus renew_status = renewed.get();
    const Acquired contender = contended.get();
    EXPECT_FALSE(renew_status == LeaseStatus::ok && contender)
        << "two holders of slot 0 with slots=" << slots;
    auto state = holder_store->inspect(name, soon());
    ASSERT_FALSE(state.holders.empty());
    EXPECT_EQ(state.holders[0].owner,
              renew_status == LeaseStatus::ok ? lease.owner : contender.lease->owner);
  }
}

// Tables of the first layout (fences without `slots`) are migrated in place by the first store
// that connects: held leases and tokens survive.
TEST(PostgresSafety, FirstLayoutTablesAreMigratedInPlace) {
  const std::string p = "pgmig" + std::to_string(getpid()) + "_";
  const std::string with_prefix = base_uri() + "?table_prefix=" + p;
  {
    RawSession s;
    s.run("DROP TABLE IF EXISTS " + p + "schema, " + p + "leases, " + p + "fences, " + p +
          "candidates");
    s.run("CREATE TABLE " + p + "schema (version INTEGER NOT NULL)");
    s.run("INSERT INTO " + p + "schema VALUES (1)");
    s.run("CREATE TABLE " + p +
          "leases (lock_name VARCHAR(255) NOT NULL, slot INTEGER NOT NULL, owner CHAR(32) NOT "
          "NULL, node_id VARCHAR(255) NOT NULL, fencing_token BIGINT NOT NULL, acquired_at "
          "TIMESTAMPTZ(6) NOT NULL, expires_at TIMESTAMPTZ(6) NOT NULL, PRIMARY KEY (lock_name, "
          "slot))");
    s.run("CREATE TABLE " + p +
          "fences (lock_name VARCHAR(255) PRIMARY KEY, last_token BIGINT NOT NULL)");
    s.run("CREATE TABLE " + p +
          "candidates (group_name VARCHAR(255) NOT NULL, node_id VARCHAR(255) NOT NULL, "
          "registered_at TIMESTAMPTZ(6) NOT NULL, expires_at TIMESTAMPTZ(6) NOT NULL, successes "
          "BIGINT NOT NULL DEFAULT 0, failures BIGINT NOT NULL DEFAULT 0, last_completion "
          "TIMESTAMPTZ(6) NULL, metadata TEXT NOT NULL DEFAULT '{}', PRIMARY KEY (group_name, "
          "node_id))");
    s.run("INSERT INTO " + p + "fences VALUES ('old', 41)");
    s.run("INSERT INTO " + p +
          "leases VALUES ('old', 0, '0123456789abcdef0123456789abcdef', 'n', 41, now(), now() + "
          "interval '60 seconds')");
  }
  EXPECT_THROW((void)open(with_prefix + "&create_schema=false")->inspect("old", soon()),
               BackendError)
      << "an unmigrated schema was accepted with create_schema=false";
  auto store = open(with_prefix);
  auto state = store->inspect("old", soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].fencing_token, 41u);
  EXPECT_FALSE(store->try_acquire({"old", new_owner_token(), "n", 5s, 0}, soon()));
  auto fresh = store->try_acquire({"new", new_owner_token(), "n", 5s, 2}, soon());
  ASSERT_TRUE(fresh);
  EXPECT_THROW((void)store->try_acquire({"new", new_owner_token(), "n", 5s, 0}, soon()),
               BackendError);
  auto strict = open(with_prefix + "&create_schema=false");
  EXPECT_EQ(strict->inspect("new", soon()).holders.size(), 1u);
  RawSession().run("DROP TABLE IF EXISTS " + p + "schema, " + p + "leases, " + p + "fences, " + p +
                   "candidates");
}

}  // namespace
}  // namespace leader
