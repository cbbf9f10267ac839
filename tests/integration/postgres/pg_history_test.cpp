// The PostgreSQL history sink (tests/integration/history_sql_cases.hpp) against the real server.
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <cstdlib>

#include "history_sql_cases.hpp"

namespace leader {
namespace {

std::string base() {
  const char* v = std::getenv("LEADER_TEST_POSTGRES_URI");
  return v && *v ? v : "postgresql://postgres@127.0.0.1:15432/leader_test";
}

std::string query(const std::string& text) {
  PGconn* c = PQconnectdb(base().c_str());
  std::string out;
  if (PQstatus(c) == CONNECTION_OK) {
    PGresult* r = PQexec(c, text.c_str());
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
    PQclear(r);
  }
  PQfinish(c);
  return out;
}

TEST(PostgresHistory, RowsRetentionAndTheElectorFeed) {
  const std::string prefix = "hist" + std::to_string(getpid()) + "_";
  auto drop = [&] {
    query("DROP TABLE IF EXISTS " + prefix + "history, " + prefix + "schema, " + prefix +
          "leases, " + prefix + "fences, " + prefix + "candidates");
  };
  drop();
  std::string uri =
      base() + (base().find('?') == std::string::npos ? "?" : "&") + "table_prefix=" + prefix;
  testing::check_sql_history(uri, prefix, query);
  drop();
}

}  // namespace
}  // namespace leader
