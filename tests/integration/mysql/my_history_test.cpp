// The MariaDB history sink (tests/integration/history_sql_cases.hpp) against the real server.
#include <gtest/gtest.h>
#include <mysql.h>
#include <unistd.h>

#include <cstdlib>

#include "history_sql_cases.hpp"

namespace leader {
namespace {

std::string base() {
  const char* v = std::getenv("LEADER_TEST_MYSQL_URI");
  return v && *v ? v : "mysql://root@127.0.0.1:13306/leader_test";
}

std::string query(const std::string& text) {
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

TEST(MysqlHistory, RowsRetentionAndTheElectorFeed) {
  const std::string prefix = "hist" + std::to_string(getpid()) + "_";
  auto drop = [&] {
    query("DROP TABLE IF EXISTS " + prefix + "history, " + prefix + "schema, " + prefix +
          "leases, " + prefix + "fences, " + prefix + "candidates");
    query("DROP PROCEDURE IF EXISTS " + prefix + "acquire");
    query("DROP PROCEDURE IF EXISTS " + prefix + "acquire_v2");
  };
  drop();
  std::string uri =
      base() + (base().find('?') == std::string::npos ? "?" : "&") + "table_prefix=" + prefix;
  testing::check_sql_history(uri, prefix, query);
  drop();
}

}  // namespace
}  // namespace leader
