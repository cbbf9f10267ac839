#include "pg_history.hpp"

#include "leader/detail/sql_history.hpp"
#include "leader/history.hpp"
#include "postgres_store.hpp"

namespace leader::postgres {
namespace {

std::string sql_time(WallTime t) {
  std::string s = format_utc(t);  // 2026-12-01T00:33:01.123Z
  s[10] = ' ';
  s.back() = '+';
  return s + "00";
}

// Writes records through one connection of its own, reconnecting after a failure.
class PostgresHistory final : public detail::SqlHistorySink {
 public:
  PostgresHistory(Config store, HistoryOptions options)
      : detail::SqlHistorySink(options, store.tables.prefix), store_(std::move(store)) {}

 private:
  void write(const HistoryRecord& r, Deadline deadline) override {
    connection(deadline).run(
        {{"INSERT INTO " + table() +
              " (lock_name, node_id, fencing_token, slot, started_at, ended_at, outcome,"
              " error, fail_open) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
          {r.lock, r.node_id.substr(0, 255), std::to_string(r.fencing_token),
           std::to_string(r.slot), sql_time(r.started), sql_time(r.ended),
           std::string(to_string(r.outcome)), r.error, r.fail_open ? "true" : "false"},
          false}},
        deadline);
  }

  Connection& connection(Deadline deadline) {
    if (conn_ && !conn_->broken()) return *conn_;
    conn_.reset();
    auto conn = Connection::open(store_.conninfo, deadline);
    conn->run({{"SELECT set_config('statement_timeout', $1, false)",
                {std::to_string(options().write_timeout.count())},
                false}},
              deadline);
    if (store_.create_schema) {
      // The advisory lock serialises concurrent first starts, as for the lease tables.
      conn->run_script("BEGIN;\nSELECT pg_advisory_xact_lock(1818322290, hashtext('" + table() +
                           "'));\nCREATE TABLE IF NOT EXISTS " + table() +
                           " (id BIGSERIAL PRIMARY KEY, lock_name VARCHAR(255) NOT NULL,"
                           " node_id VARCHAR(255) NOT NULL, fencing_token BIGINT NOT NULL,"
                           " slot INTEGER NOT NULL, started_at TIMESTAMPTZ(3) NOT NULL,"
                           " ended_at TIMESTAMPTZ(3) NOT NULL, outcome VARCHAR(16) NOT NULL,"
                           " error TEXT NOT NULL DEFAULT '', fail_open BOOLEAN NOT NULL);\n"
                           "CREATE INDEX IF NOT EXISTS " +
                           table() + "_ended ON " + table() + " (ended_at);\nCOMMIT;",
                       deadline);
    }
    conn_ = std::move(conn);
    return *conn_;
  }

  void prune(Deadline deadline) override {
    Connection& conn = connection(deadline);
    if (options().max_age > Duration{0})
      conn.run({{"DELETE FROM " + table() + " WHERE ended_at < $1",
                 {sql_time(std::chrono::system_clock::now() - options().max_age)},
                 false}},
               deadline);
    if (options().max_records > 0)
      conn.run({{"DELETE FROM " + table() + " WHERE id < (SELECT id FROM " + table() +
                     " ORDER BY id DESC LIMIT 1 OFFSET $1)",
                 {std::to_string(options().max_records - 1)},
                 false}},
               deadline);
  }

  Config store_;
  std::unique_ptr<Connection> conn_;
};

}  // namespace

std::shared_ptr<HistorySink> make_history_sink(Config config, const HistoryOptions& options) {
  return std::make_shared<PostgresHistory>(std::move(config), options);
}

}  // namespace leader::postgres
