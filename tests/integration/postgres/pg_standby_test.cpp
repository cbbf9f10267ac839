// The postgres store on the primary + streaming standby of scripts/pg-standby.sh (node a
// 127.0.0.1:15442 primary, node b 15443 standby; RESOURCE_LOCK postgres-standby): what the
// README's "Primary and standby" says about read-only servers and fencing tokens. Failovers
// themselves are in tests/faults/topology_postgres.py (they need a pair of their own).
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "leader/leader.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
std::string primary() {
  return env_or("LEADER_TEST_PG_HA_PRIMARY", "postgresql://postgres@127.0.0.1:15442/leader_test");
}
std::string standby() {
  return env_or("LEADER_TEST_PG_HA_STANDBY", "postgresql://postgres@127.0.0.1:15443/leader_test");
}
std::string both() {
  return env_or("LEADER_TEST_POSTGRES_STANDBY_URI",
                "postgresql://postgres@127.0.0.1:15442,127.0.0.1:15443/leader_test"
                "?target_session_attrs=read-write") +
         "&prefix=pgha_";
}
std::string unique(const std::string& what) {
  return "pgha-" + what + "-" + std::to_string(getpid()) + "-" + std::to_string(std::time(nullptr));
}
Deadline soon() { return Deadline::after(5s); }

// Runs each statement on one session; returns the first value of the last one's first row, or
// "error: ..." at the first failure.
std::string sql(const std::string& conninfo, const std::vector<std::string>& statements) {
  PGconn* c = PQconnectdb(conninfo.c_str());
  std::string out;
  if (PQstatus(c) != CONNECTION_OK) out = std::string("error: ") + PQerrorMessage(c);
  for (std::size_t i = 0; i < statements.size() && out.rfind("error: ", 0) != 0; ++i) {
    PGresult* r = PQexec(c, statements[i].c_str());
    out.clear();
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
      out = std::string("error: ") + PQerrorMessage(c);
    PQclear(r);
  }
  PQfinish(c);
  return out;
}

ErrorCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const BackendError& e) {
    return e.code();
  }
  ADD_FAILURE() << "no BackendError";
  return ErrorCode::internal;
}

// A URI naming the standby alone is a misconfiguration: failed_precondition naming the fix.
TEST(PostgresStandby, AStandbyReachedWhenConnectingIsFailedPrecondition) {
  ASSERT_EQ(sql(standby(), {"SELECT pg_is_in_recovery()"}), "t") << "node b is not a standby";
  auto store = open(standby() + "?prefix=pgha_");
  try {
    (void)store->inspect(unique("standby"), soon());
    FAIL() << "the standby served the store";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << e.what();
    EXPECT_NE(std::string(e.what()).find("target_session_attrs=read-write"), std::string::npos)
        << e.what();
  }
}

// A primary turned read-only under an open session (what a switchover does first): the write is
// refused, unavailable (retryable, not the elector-stopping failed_precondition), the connection
// is dropped, and once the server accepts writes again the next call succeeds on a new one.
TEST(PostgresStandby, AReadOnlyErrorIsUnavailableAndTheNextCallReconnects) {
  auto store = open(both() + "&pool_size=1");
  const std::string lock = unique("ro");
  auto first = store->try_acquire({lock, new_owner_token(), "n", 5s, 0}, soon());
  ASSERT_TRUE(first);
  struct Undo {
    ~Undo() {
      (void)sql(primary(),
                {"SET default_transaction_read_only = off",
                 "ALTER SYSTEM RESET default_transaction_read_only", "SELECT pg_reload_conf()"});
    }
  } undo;
  ASSERT_EQ(sql(primary(),
                {"ALTER SYSTEM SET default_transaction_read_only = on", "SELECT pg_reload_conf()"}),
            "t");
  std::this_thread::sleep_for(300ms);  // the reload reaches the store's idle session
  EXPECT_EQ(code_of([&] {
              (void)store->try_acquire({lock, new_owner_token(), "n", 5s, 0}, soon());
            }),
            ErrorCode::unavailable);
  ASSERT_EQ(sql(primary(),
                {"SET default_transaction_read_only = off",
                 "ALTER SYSTEM RESET default_transaction_read_only", "SELECT pg_reload_conf()"}),
            "t");
  std::this_thread::sleep_for(300ms);
  auto state = store->inspect(lock, soon());
  ASSERT_EQ(state.holders.size(), 1u) << "the refused acquisition changed something";
  EXPECT_EQ(state.holders[0].fencing_token, first.lease->fencing_token);
  EXPECT_EQ(store->release(*first.lease, Duration{0}, soon()), LeaseStatus::ok);
}

// Tokens carry the server's WAL timeline above bit 40 (README "Fencing source").
TEST(PostgresStandby, FencingTokensCarryTheTimeline) {
  const std::string tli = sql(
      primary(), {"SELECT ('x' || left(pg_walfile_name(pg_current_wal_lsn()), 8))::bit(32)::int"});
  ASSERT_FALSE(tli.empty());
  ASSERT_EQ(tli.find("error"), std::string::npos) << tli;
  auto store = open(both());
  const std::string lock = unique("tli");
  auto a = store->try_acquire({lock, new_owner_token(), "n", 5s, 0}, soon());
  ASSERT_TRUE(a);
  EXPECT_EQ(a.lease->fencing_token >> 40, std::stoull(tli));
  ASSERT_EQ(store->release(*a.lease, Duration{0}, soon()), LeaseStatus::ok);
  auto b = store->try_acquire({lock, new_owner_token(), "n", 5s, 0}, soon());
  ASSERT_TRUE(b);
  EXPECT_EQ(b.lease->fencing_token, a.lease->fencing_token + 1);
  (void)store->release(*b.lease, Duration{0}, soon());
}

}  // namespace
}  // namespace leader
