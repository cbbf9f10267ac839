#pragma once
// Store cases every SQL server store passes (postgres, mysql) beyond the contract suite: a server
// restart while holding keeps the lease and reconnects, twenty concurrent first starts create the
// schema once, and create_schema=false reports missing tables. Each test file supplies its
// server's URIs, its SQL bookkeeping and its restart.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "leader/leader.hpp"

namespace leader::testing {

/// What the cases need from one SQL server's test file.
struct SqlServer {
  std::function<std::string()> uri;                            // table_prefix of the suite
  std::function<std::string(const std::string&)> with_prefix;  // the base URI with table_prefix=
  std::function<std::string(const std::string&)> sql;          // first value of a query, or ""
  std::function<void(const std::string&)> drop_tables;         // every object of a prefix
  std::function<bool()> restart;                               // false: cannot restart here
};

inline Deadline sql_case_deadline() { return Deadline::after(std::chrono::seconds(5)); }

inline LeaseRequest sql_case_request(const std::string& lock) {
  return {lock, new_owner_token(), "it-node", std::chrono::seconds(30), 0};
}

/// A lease held across a server restart is still ours on a new connection, and exclusive.
inline void check_restart_keeps_the_lease(const SqlServer& server, const std::string& name) {
  auto store = open(server.uri());
  auto got = store->try_acquire(sql_case_request(name), sql_case_deadline());
  ASSERT_TRUE(got);
  Lease lease = *got.lease;
  EXPECT_EQ(store->renew(lease, std::chrono::seconds(30), sql_case_deadline()).status,
            LeaseStatus::ok);  // a pooled connection exists
  if (!server.restart()) GTEST_SKIP() << "cannot restart the server here";
  EXPECT_EQ(store->renew(lease, std::chrono::seconds(30), sql_case_deadline()).status,
            LeaseStatus::ok);  // on a new connection
  auto other = open(server.uri());
  EXPECT_FALSE(other->try_acquire(sql_case_request(name), sql_case_deadline()));
  auto state = other->inspect(name, sql_case_deadline());
  ASSERT_TRUE(state.held());
  EXPECT_EQ(state.holders[0].fencing_token, lease.fencing_token);
  EXPECT_EQ(store->release(lease, Duration{0}, sql_case_deadline()), LeaseStatus::ok);
  auto next = other->try_acquire(sql_case_request(name), sql_case_deadline());
  ASSERT_TRUE(next);
  EXPECT_GT(next.lease->fencing_token, lease.fencing_token);
}

/// Twenty stores opened at once on an empty prefix create the schema exactly once.
inline void check_concurrent_first_starts(const SqlServer& server, const std::string& prefix) {
  server.drop_tables(prefix);
  const std::string u = server.with_prefix(prefix);
  std::latch go(20);
  std::atomic<int> ok{0};
  std::vector<std::thread> starts;
  for (int i = 0; i < 20; ++i) {
    starts.emplace_back([&] {
      auto store = open(u);
      go.arrive_and_wait();
      try {
        (void)store->inspect("first-start", sql_case_deadline());
        ++ok;
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
      }
    });
  }
  for (auto& t : starts) t.join();
  EXPECT_EQ(ok.load(), 20);
  EXPECT_EQ(server.sql("SELECT count(*) FROM " + prefix + "schema"), "1");
  EXPECT_EQ(server.sql("SELECT max(version) FROM " + prefix + "schema"), "1");
  server.drop_tables(prefix);
}

/// create_schema=false on a prefix without tables: failed_precondition, and nothing created
/// (`leases_absent_query` answers `absent_value` on this server when the leases table is absent).
inline void check_create_schema_false(const SqlServer& server, const std::string& prefix,
                                      const std::string& leases_absent_query,
                                      const std::string& absent_value) {
  server.drop_tables(prefix);
  auto store = open(server.with_prefix(prefix + "&create_schema=false"));
  try {
    (void)store->inspect("x", sql_case_deadline());
    FAIL() << "no error without tables";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << e.what();
  }
  EXPECT_EQ(server.sql(leases_absent_query), absent_value);
}

}  // namespace leader::testing
