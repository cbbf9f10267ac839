// The SQLite history sink (tests/integration/history_sql_cases.hpp) on a file of its own.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

#include "history_sql_cases.hpp"

namespace leader {
namespace {

TEST(SqliteHistory, RowsRetentionAndTheElectorFeed) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("leader-sqlite-history-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "leader.db").string();
  auto query = [&](const std::string& sql) {
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
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
  };
  testing::check_sql_history("sqlite://" + path + "?table_prefix=hist_", "hist_", query);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace leader
