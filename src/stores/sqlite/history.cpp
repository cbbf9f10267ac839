#include "history.hpp"

#include "connection.hpp"
#include "leader/detail/sql_history.hpp"
#include "leader/history.hpp"
#include "sqlite_store.hpp"

namespace leader::sqlite {
namespace {

// Writes records through one connection of its own, opened on first use.
class SqliteHistory final : public detail::SqlHistorySink {
 public:
  SqliteHistory(Config store, HistoryOptions options)
      : SqlHistorySink(options, store.table_prefix), store_(std::move(store)) {}

 private:
  void write(const HistoryRecord& r, Deadline deadline) override {
    Connection& conn = connection(deadline);
    conn.begin_call(deadline, store_.busy_timeout);
    Statement insert(conn, "INSERT INTO " + table() +
                               " (lock_name, node_id, fencing_token, slot, started_at, ended_at,"
                               " outcome, error, fail_open) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,"
                               " ?8, ?9)");
    insert.bind(1, r.lock)
        .bind(2, r.node_id)
        .bind(3, static_cast<std::int64_t>(r.fencing_token))
        .bind(4, std::int64_t{r.slot})
        .bind(5, format_utc(r.started))
        .bind(6, format_utc(r.ended))
        .bind(7, to_string(r.outcome))
        .bind(8, r.error)
        .bind(9, std::int64_t{r.fail_open ? 1 : 0});
    insert.execute("history insert");
  }

  Connection& connection(Deadline deadline) {
    if (conn_) return *conn_;
    auto conn = std::make_unique<Connection>(store_.path);
    if (store_.create_schema) {
      conn->begin_call(deadline, store_.busy_timeout);
      const std::string ddl = "CREATE TABLE IF NOT EXISTS " + table() +
                              " (id INTEGER PRIMARY KEY AUTOINCREMENT, lock_name TEXT NOT NULL,"
                              " node_id TEXT NOT NULL, fencing_token INTEGER NOT NULL,"
                              " slot INTEGER NOT NULL, started_at TEXT NOT NULL,"
                              " ended_at TEXT NOT NULL, outcome TEXT NOT NULL,"
                              " error TEXT NOT NULL DEFAULT '', fail_open INTEGER NOT NULL);"
                              " CREATE INDEX IF NOT EXISTS " +
                              table() + "_ended ON " + table() + " (ended_at);";
      conn->exec(ddl.c_str(), "history schema");
    }
    conn_ = std::move(conn);
    return *conn_;
  }

  void prune(Deadline deadline) override {
    Connection& conn = connection(deadline);
    conn.begin_call(deadline, store_.busy_timeout);
    if (options().max_age > Duration{0}) {
      Statement del(conn, "DELETE FROM " + table() + " WHERE ended_at < ?1");
      del.bind(1, format_utc(std::chrono::system_clock::now() - options().max_age));
      del.execute("history prune by age");
    }
    if (options().max_records > 0) {
      Statement del(conn, "DELETE FROM " + table() + " WHERE id < (SELECT id FROM " + table() +
                              " ORDER BY id DESC LIMIT 1 OFFSET ?1)");
      del.bind(1, static_cast<std::int64_t>(options().max_records - 1));
      del.execute("history prune by count");
    }
  }

  Config store_;
  std::unique_ptr<Connection> conn_;
};

}  // namespace

std::shared_ptr<HistorySink> make_history_sink(Config config, const HistoryOptions& options) {
  return std::make_shared<SqliteHistory>(std::move(config), options);
}

}  // namespace leader::sqlite
