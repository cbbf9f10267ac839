#include "history.hpp"

#include <mutex>

#include "connection.hpp"
#include "leader/history.hpp"
#include "sqlite_store.hpp"

namespace leader::sqlite {
namespace {

// Writes records through one connection of its own, opened on first use.
class SqliteHistory final : public HistorySink {
 public:
  SqliteHistory(Options store, HistoryOptions options)
      : store_(std::move(store)), options_(options), table_(store_.table_prefix + "history") {
    options_.validate();
  }

  void record(const HistoryRecord& r) override {
    std::lock_guard lock(mu_);
    Connection& conn = connection();
    conn.begin_call(Deadline::after(options_.write_timeout), store_.busy_timeout);
    Statement insert(conn, "INSERT INTO " + table_ +
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
    const auto now = std::chrono::steady_clock::now();
    if (last_prune_ != TimePoint{} && now - last_prune_ < options_.prune_interval) return;
    last_prune_ = now;
    prune(conn);
  }

 private:
  Connection& connection() {
    if (conn_) return *conn_;
    auto conn = std::make_unique<Connection>(store_.path);
    if (store_.create_schema) {
      conn->begin_call(Deadline::after(options_.write_timeout), store_.busy_timeout);
      const std::string ddl = "CREATE TABLE IF NOT EXISTS " + table_ +
                              " (id INTEGER PRIMARY KEY AUTOINCREMENT, lock_name TEXT NOT NULL,"
                              " node_id TEXT NOT NULL, fencing_token INTEGER NOT NULL,"
                              " slot INTEGER NOT NULL, started_at TEXT NOT NULL,"
                              " ended_at TEXT NOT NULL, outcome TEXT NOT NULL,"
                              " error TEXT NOT NULL DEFAULT '', fail_open INTEGER NOT NULL);"
                              " CREATE INDEX IF NOT EXISTS " +
                              table_ + "_ended ON " + table_ + " (ended_at);";
      conn->exec(ddl.c_str(), "history schema");
    }
    conn_ = std::move(conn);
    return *conn_;
  }

  void prune(Connection& conn) {
    conn.begin_call(Deadline::after(options_.write_timeout), store_.busy_timeout);
    if (options_.max_age > Duration{0}) {
      Statement del(conn, "DELETE FROM " + table_ + " WHERE ended_at < ?1");
      del.bind(1, format_utc(std::chrono::system_clock::now() - options_.max_age));
      del.execute("history prune by age");
    }
    if (options_.max_records > 0) {
      Statement del(conn, "DELETE FROM " + table_ + " WHERE id < (SELECT id FROM " + table_ +
                              " ORDER BY id DESC LIMIT 1 OFFSET ?1)");
      del.bind(1, static_cast<std::int64_t>(options_.max_records - 1));
      del.execute("history prune by count");
    }
  }

  Options store_;
  HistoryOptions options_;
  std::string table_;
  std::mutex mu_;
  std::unique_ptr<Connection> conn_;
  TimePoint last_prune_{};
};

}  // namespace

void register_history_sinks() {
  register_history_sink("sqlite", [](const Uri& uri, const HistoryOptions& options) {
    return std::make_shared<SqliteHistory>(Options::from_uri(uri), options);
  });
}

}  // namespace leader::sqlite
