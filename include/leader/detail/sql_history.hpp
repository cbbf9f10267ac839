#pragma once
/// @file sql_history.hpp
/// The part the SQL history sinks (SQLite, PostgreSQL, MariaDB/MySQL) share, so that each keeps
/// only its own statements (not part of the user-facing API).

#include <mutex>
#include <string>

#include "leader/history.hpp"
#include "leader/time.hpp"

namespace leader::detail {

/// A history sink writing to table `<table_prefix>history`: validates the options, serialises
/// writes, and prunes after a write at most once per `prune_interval`. Thread-safe.
class SqlHistorySink : public HistorySink {
 public:
  /// Writes `record` (write()), then prunes (prune()) when a prune is due; under one lock.
  void record(const HistoryRecord& record) final;

 protected:
  /// Validates `options` (InvalidArgument).
  SqlHistorySink(HistoryOptions options, const std::string& table_prefix);

  /// Inserts one row within `deadline`; called under the sink's lock.
  virtual void write(const HistoryRecord& record, Deadline deadline) = 0;
  /// Deletes rows older than `options().max_age` (> 0) and beyond `options().max_records`
  /// (> 0) within `deadline`; called under the sink's lock after a write.
  virtual void prune(Deadline deadline) = 0;

  /// The validated options.
  [[nodiscard]] const HistoryOptions& options() const { return options_; }
  /// The table name, `<table_prefix>history`.
  [[nodiscard]] const std::string& table() const { return table_; }

 private:
  HistoryOptions options_;
  std::string table_;
  std::mutex mu_;
  TimePoint last_prune_{};
};

}  // namespace leader::detail
