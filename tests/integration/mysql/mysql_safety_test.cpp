// MariaDB store safety cases judged by the server: a renew delayed on a row lock racing a
// contender (issue 10, defect 2) and schema migration. The same-owner, group-size and renewal
// cases every store shares are in tests/contract (ownership_test.cpp, store_test.cpp).
#include <gtest/gtest.h>
#include <mysql.h>
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
  const char* v = std::getenv("LEADER_TEST_MYSQL_URI");
  return v && *v ? v : "mysql://root@127.0.0.1:13306/leader_test";
}
std::string uri_with_prefix(const std::string& prefix) {
  return base_uri() + (base_uri().find('?') == std::string::npos ? "?" : "&") +
         "table_prefix=" + prefix;
}
std::string unique(const std::string& what) {
  return "mysafe-" + what + "-" + std::to_string(getpid()) + "-" +
         std::to_string(std::time(nullptr));
}
Deadline soon() { return Deadline::after(5s); }
LeaseRequest request(const std::string& lock, Duration ttl, int slots = 0) {
  return {lock, new_owner_token(), "safety-node", ttl, slots};
}

/// A plain client session for test bookkeeping (holding row locks, counting lock waits).
class RawSession {
 public:
  RawSession() : m_(mysql_init(nullptr)) {
    if (!mysql_real_connect(m_, "127.0.0.1", "root", nullptr, "leader_test", 13306, nullptr, 0))
      throw std::runtime_error(std::string("raw connect: ") + mysql_error(m_));
  }
  ~RawSession() { mysql_close(m_); }
  RawSession(const RawSession&) = delete;
  RawSession& operator=(const RawSession&) = delete;

  /// Runs `text`; returns the first column of the first row ("" when none).
  std::string run(const std::string& text) {
    if (mysql_query(m_, text.c_str()) != 0) throw std::runtime_error(text + ": " + mysql_error(m_));
    std::string out;
    if (MYSQL_RES* res = mysql_store_result(m_)) {
      if (MYSQL_ROW row = mysql_fetch_row(res)) out = row[0] ? row[0] : "";
      mysql_free_result(res);
    }
    return out;
  }

 private:
  MYSQL* m_;
};

/// Waits until `n` sessions have been running a statement that names `needle` for two polls in a
/// row (a statement of this store finishes in well under a millisecond unless it waits for a
/// row lock).
bool wait_for_lock_waiters(RawSession& observer, const std::string& needle, int n) {
  const auto until = Clock::now() + 5s;
  int seen = 0;
  while (Clock::now() < until) {
    auto count =
        observer.run("SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE '%" +
                     needle + "%' AND info NOT LIKE '%processlist%'");
    seen = std::stoi(count) >= n ? seen + 1 : 0;
    if (seen >= 2) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

void drop_objects(const std::string& prefix) {
  RawSession s;
  s.run("DROP TABLE IF EXISTS " + prefix + "schema, " + prefix + "leases, " + prefix + "fences, " +
        prefix + "candidates");
  s.run("DROP PROCEDURE IF EXISTS " + prefix + "acquire");
  s.run("DROP PROCEDURE IF EXISTS " + prefix + "acquire_v2");
}

// Defect 2: the holder's renew is sent before expiry and waits on the lease row (a third session
// holds it FOR UPDATE); a contender arrives after expiry and also waits. When the row lock is
// released both must not succeed.
TEST(MysqlSafety, ARenewDelayedOnTheRowAndAContenderNeverBothSucceed) {
  const std::string prefix = "myrace" + std::to_string(getpid()) + "_";
  drop_objects(prefix);
  const auto name = unique("race");
  auto holder_store = open(uri_with_prefix(prefix));
  auto contender_store = open(uri_with_prefix(prefix));
  (void)contender_store->inspect(name, soon());  // connected and prepared before the race
  const auto ttl = 1500ms;
  const auto sent = Clock::now();
  auto got = holder_store->try_acquire(request(name, ttl), soon());
  ASSERT_TRUE(got);
  Lease lease = *got.lease;

  RawSession third, observer;
  third.run("START TRANSACTION");
  third.run("SELECT COUNT(*) FROM " + prefix + "leases WHERE lock_name = '" + name +
            "' FOR UPDATE");
  auto renewed = std::async(std::launch::async, [&] {
    return holder_store->renew(lease, 10s, Deadline::after(20s)).status;
  });
  ASSERT_TRUE(wait_for_lock_waiters(observer, prefix, 1)) << "the renew never waited";
  std::this_thread::sleep_until(sent + ttl + 200ms);  // the lease is expired on the server
  ASSERT_EQ(renewed.wait_for(0s), std::future_status::timeout);
  auto contended = std::async(std::launch::async, [&] {
    return contender_store->try_acquire(request(name, 10s), Deadline::after(20s));
  });
  ASSERT_TRUE(wait_for_lock_waiters(observer, prefix, 2)) << "the contender never waited";
  third.run("COMMIT");

  const LeaseStatus renew_status = renewed.get();
  const Acquired contender = contended.get();
  EXPECT_FALSE(renew_status == LeaseStatus::ok && contender)
      << "two holders: the renew returned ok and the contender got token "
      << contender.lease->fencing_token;
  auto state = holder_store->inspect(name, soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].owner,
            renew_status == LeaseStatus::ok ? lease.owner : contender.lease->owner);
  drop_objects(prefix);
}

// Tables of the first layout (fences without `slots`, no acquire_v2) are migrated in place by
// the first store that connects: held leases and tokens survive.
TEST(MysqlSafety, FirstLayoutTablesAreMigratedInPlace) {
  const std::string p = "mymig" + std::to_string(getpid()) + "_";
  drop_objects(p);
  const std::string opts = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
  {
    RawSession s;
    s.run("CREATE TABLE " + p + "schema (version INTEGER NOT NULL)" + opts);
    s.run("INSERT INTO " + p + "schema VALUES (1)");
    s.run("CREATE TABLE " + p +
          "leases (lock_name VARCHAR(255) NOT NULL, slot INTEGER NOT NULL, owner CHAR(32) NOT "
          "NULL, node_id VARCHAR(255) NOT NULL, fencing_token BIGINT NOT NULL, acquired_at "
          "DATETIME(6) NOT NULL, expires_at DATETIME(6) NOT NULL, PRIMARY KEY (lock_name, slot))" +
          opts);
    s.run("CREATE TABLE " + p +
          "fences (lock_name VARCHAR(255) NOT NULL PRIMARY KEY, last_token BIGINT NOT NULL)" +
          opts);
    s.run("CREATE TABLE " + p +
          "candidates (group_name VARCHAR(255) NOT NULL, node_id VARCHAR(255) NOT NULL, "
          "registered_at DATETIME(6) NOT NULL, expires_at DATETIME(6) NOT NULL, successes BIGINT "
          "NOT NULL DEFAULT 0, failures BIGINT NOT NULL DEFAULT 0, last_completion DATETIME(6) "
          "NULL, metadata TEXT NOT NULL, PRIMARY KEY (group_name, node_id))" +
          opts);
    s.run("INSERT INTO " + p + "fences VALUES ('old', 41)");
    s.run("INSERT INTO " + p +
          "leases VALUES ('old', 0, '0123456789abcdef0123456789abcdef', 'n', 41, "
          "UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL 60 SECOND)");
  }
  EXPECT_THROW((void)open(uri_with_prefix(p) + "&create_schema=false")->inspect("old", soon()),
               BackendError)
      << "an unmigrated schema was accepted with create_schema=false";
  auto store = open(uri_with_prefix(p));
  auto state = store->inspect("old", soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].fencing_token, 41u);
  EXPECT_FALSE(store->try_acquire(request("old", 5s), soon()));
  auto fresh = store->try_acquire(request("new", 5s, 2), soon());
  ASSERT_TRUE(fresh);
  EXPECT_THROW((void)store->try_acquire(request("new", 5s), soon()), BackendError);
  auto strict = open(uri_with_prefix(p) + "&create_schema=false");
  EXPECT_EQ(strict->inspect("new", soon()).holders.size(), 1u);
  drop_objects(p);
}

}  // namespace
}  // namespace leader
