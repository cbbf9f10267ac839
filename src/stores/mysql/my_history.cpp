#include "my_history.hpp"

#include "leader/detail/sql_history.hpp"
#include "leader/history.hpp"
#include "mysql_store.hpp"

namespace leader::mysql {
namespace {

// "2026-12-01 00:33:01.123" (UTC), the form a DATETIME(3) column takes.
std::string sql_time(WallTime t) {
  std::string s = format_utc(t);
  s[10] = ' ';
  s.pop_back();
  return s;
}

constexpr const char* kInsert = "history_insert";
constexpr const char* kPruneAge = "history_prune_age";
constexpr const char* kPruneCount = "history_prune_count";

// Writes records through one connection of its own, reconnecting after a failure.
class MysqlHistory final : public detail::SqlHistorySink {
 public:
  MysqlHistory(Config store, HistoryOptions options)
      : detail::SqlHistorySink(options, store.tables.prefix), store_(std::move(store)) {}

 private:
  void write(const HistoryRecord& r, Deadline deadline) override {
    connection(deadline).execute(
        kInsert,
        {r.lock, r.node_id.substr(0, 255), static_cast<std::int64_t>(r.fencing_token),
         std::int64_t{r.slot}, sql_time(r.started), sql_time(r.ended),
         std::string(to_string(r.outcome)), r.error, std::int64_t{r.fail_open ? 1 : 0}},
        deadline);
  }

  void prune(Deadline deadline) override {
    Connection& conn = connection(deadline);
    if (options().max_age > Duration{0})
      conn.execute(kPruneAge, {sql_time(std::chrono::system_clock::now() - options().max_age)},
                   deadline);
    if (options().max_records > 0)
      conn.execute(kPruneCount, {static_cast<std::int64_t>(options().max_records - 1)}, deadline);
  }

  Connection& connection(Deadline deadline) {
    if (conn_ && !conn_->broken()) return *conn_;
    conn_.reset();
    auto conn = Connection::open(store_.connect, deadline);
    if (store_.create_schema)
      conn->query("CREATE TABLE IF NOT EXISTS " + table() +
                      " (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
                      " lock_name VARCHAR(255) NOT NULL, node_id VARCHAR(255) NOT NULL,"
                      " fencing_token BIGINT UNSIGNED NOT NULL, slot INTEGER NOT NULL,"
                      " started_at DATETIME(3) NOT NULL, ended_at DATETIME(3) NOT NULL,"
                      " outcome VARCHAR(16) NOT NULL, error TEXT NOT NULL,"
                      " fail_open BOOLEAN NOT NULL, INDEX (ended_at))"
                      " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
                  deadline);
    conn->prepare(kInsert,
                  "INSERT INTO " + table() +
                      " (lock_name, node_id, fencing_token, slot, started_at, ended_at, outcome,"
                      " error, fail_open) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  deadline);
    conn->prepare(kPruneAge, "DELETE FROM " + table() + " WHERE ended_at < ?", deadline);
    // MariaDB refuses a subquery on the table a DELETE changes unless it is materialised.
    conn->prepare(kPruneCount,
                  "DELETE FROM " + table() + " WHERE id < (SELECT id FROM (SELECT id FROM " +
                      table() + " ORDER BY id DESC LIMIT 1 OFFSET ?) AS newest)",
                  deadline);
    conn_ = std::move(conn);
    return *conn_;
  }

  Config store_;
  std::unique_ptr<Connection> conn_;
};

}  // namespace

std::shared_ptr<HistorySink> make_history_sink(Config config, const HistoryOptions& options) {
  return std::make_shared<MysqlHistory>(std::move(config), options);
}

}  // namespace leader::mysql
