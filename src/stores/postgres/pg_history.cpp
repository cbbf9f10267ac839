#include "pg_history.hpp"

#include <mutex>

#include "leader/history.hpp"
#include "postgres_store.hpp"

namespace leader::detail::pg {
namespace {

std::string sql_time(WallTime t) {
  std::string s = format_utc(t);  // 2026-12-01T00:33:01.123Z
  s[10] = ' ';
  s.back() = '+';
  return s + "00";
}

// Writes records through one connection of its own, reconnecting after a failure.
class PostgresHistory final : public HistorySink {
 public:
  PostgresHistory(StoreOptions store, HistoryOptions options)
      : store_(std::move(store)), options_(options), table_(store_.tables.prefix + "history") {
    options_.validate();
  }

  void record(const HistoryRecord& r) override {
    std::lock_guard lock(mu_);
    const Deadline deadline = Deadline::after(options_.write_timeout);
    Connection& conn = connection(deadline);
    conn.run({{"INSERT INTO " + table_ +
                   " (lock_name, node_id, fencing_token, slot, started_at, ended_at, outcome,"
                   " error, fail_open) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
               {r.lock, r.node_id.substr(0, 255), std::to_string(r.fencing_token),
                std::to_string(r.slot), sql_time(r.started), sql_time(r.ended),
                std::string(to_string(r.outcome)), r.error, r.fail_open ? "true" : "false"},
               false}},
             deadline);
    const auto now = std::chrono::steady_clock::now();
    if (last_prune_ != TimePoint{} && now - last_prune_ < options_.prune_interval) return;
    last_prune_ = now;
    prune(conn, deadline);
  }

 private:
  Connection& connection(Deadline deadline) {
    if (conn_ && !conn_->broken()) return *conn_;
    conn_.reset();
    auto conn = Connection::open(store_.conninfo, deadline);
    conn->run({{"SELECT set_config('statement_timeout', $1, false)",
                {std::to_string(options_.write_timeout.count())},
                false}},
              deadline);
    if (store_.create_schema) {
      // The advisory lock serialises concurrent first starts, as for the lease tables.
      conn->run_script("BEGIN;\nSELECT pg_advisory_xact_lock(1818322290, hashtext('" + table_ +
                           "'));\nCREATE TABLE IF NOT EXISTS " + table_ +
                           " (id BIGSERIAL PRIMARY KEY, lock_name VARCHAR(255) NOT NULL,"
                           " node_id VARCHAR(255) NOT NULL, fencing_token BIGINT NOT NULL,"
                           " slot INTEGER NOT NULL, started_at TIMESTAMPTZ(3) NOT NULL,"
                           " ended_at TIMESTAMPTZ(3) NOT NULL, outcome VARCHAR(16) NOT NULL,"
                           " error TEXT NOT NULL DEFAULT '', fail_open BOOLEAN NOT NULL);\n"
                           "CREATE INDEX IF NOT EXISTS " +
                           table_ + "_ended ON " + table_ + " (ended_at);\nCOMMIT;",
                       deadline);
    }
    conn_ = std::move(conn);
    return *conn_;
  }

  void prune(Connection& conn, Deadline deadline) {
    if (options_.max_age > Duration{0})
      conn.run({{"DELETE FROM " + table_ + " WHERE ended_at < $1",
                 {sql_time(std::chrono::system_clock::now() - options_.max_age)},
                 false}},
               deadline);
    if (options_.max_records > 0)
      conn.run({{"DELETE FROM " + table_ + " WHERE id < (SELECT id FROM " + table_ +
                     " ORDER BY id DESC LIMIT 1 OFFSET $1)",
                 {std::to_string(options_.max_records - 1)},
                 false}},
               deadline);
  }

  StoreOptions store_;
  HistoryOptions options_;
  std::string table_;
  std::mutex mu_;
  std::unique_ptr<Connection> conn_;
  TimePoint last_prune_{};
};

}  // namespace

void register_history_sinks() {
  for (const char* scheme : {"postgresql", "postgres"}) {
    register_history_sink(scheme, [](const Uri& uri, const HistoryOptions& options) {
      return std::make_shared<PostgresHistory>(parse_options(uri), options);
    });
  }
}

}  // namespace leader::detail::pg
