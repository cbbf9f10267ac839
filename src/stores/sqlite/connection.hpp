#pragma once
/// @file connection.hpp
/// A thin RAII layer over one sqlite3 connection and its prepared statements. Every call through
/// it is bounded by a deadline: the busy handler gives up at the deadline or after the busy
/// timeout, and a progress handler interrupts statements that run past the deadline. Not
/// thread-safe: the store serialises access with its own mutex.

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "leader/errors.hpp"
#include "leader/time.hpp"

namespace leader::sqlite {

/// One open database file; owns the sqlite3 handle.
class Connection {
 public:
  /// Opens (creating when missing) the database file at `path`; throws BackendError
  /// (failed_precondition) naming the path when it cannot be opened or created.
  explicit Connection(std::string path);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// The raw handle, for preparing statements.
  [[nodiscard]] sqlite3* handle() const { return db_; }
  /// The database path, as given.
  [[nodiscard]] const std::string& path() const { return path_; }

  /// Bounds the following statements by `deadline` and by `busy_timeout` of lock waiting.
  void begin_call(Deadline deadline, Duration busy_timeout);
  /// Runs constant SQL without parameters (pragmas, DDL, BEGIN/COMMIT); throws on failure.
  void exec(const char* sql, std::string_view what);
  /// As exec(), but also retries an SQLITE_BUSY that SQLite returned without asking the busy
  /// handler (it does so when waiting could deadlock: a connection that read the database and
  /// needs an exclusive lock, as `PRAGMA journal_mode = WAL` on a new database, while others do
  /// the same), with the busy handler's back-off, until busy_timeout or the call's deadline.
  void exec_retrying_busy(const char* sql, std::string_view what);
  /// Rolls back an open transaction, ignoring errors (used while unwinding).
  void rollback_quietly() noexcept;
  /// Throws the BackendError that matches the sqlite result code `rc` of operation `what`.
  [[noreturn]] void fail(int rc, std::string_view what) const;

 private:
  static int on_busy(void* self, int count);
  static int on_progress(void* self);

  std::string path_;
  sqlite3* db_ = nullptr;
  TimePoint deadline_{};
  TimePoint busy_until_{};
  bool deadline_hit_ = false;
  bool busy_hit_ = false;
};

/// A prepared statement of one connection. Parameters are bound by index (1-based); `reset()`
/// makes it reusable. Only constant SQL text is prepared: user values are always bound.
class Statement {
 public:
  /// Prepares `sql` on `conn`; throws BackendError on failure.
  Statement(Connection& conn, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  /// Binds text (copied by sqlite).
  Statement& bind(int index, std::string_view value);
  /// Binds a 64-bit integer.
  Statement& bind(int index, std::int64_t value);
  /// Binds SQL NULL.
  Statement& bind_null(int index);
  /// Advances; true when a row is available, false when done. Throws BackendError on failure.
  bool step(std::string_view what);
  /// Runs to completion and returns the number of rows changed.
  int execute(std::string_view what);
  /// Integer value of column `i` of the current row.
  [[nodiscard]] std::int64_t int_at(int i) const;
  /// Text value of column `i` of the current row ("" for NULL).
  [[nodiscard]] std::string text_at(int i) const;
  /// True when column `i` of the current row is NULL.
  [[nodiscard]] bool null_at(int i) const;
  /// Resets the statement and clears its bindings.
  void reset() noexcept;

 private:
  Connection& conn_;
  sqlite3_stmt* stmt_ = nullptr;
};

/// Resets a statement when leaving a scope, also while unwinding.
class ResetOnExit {
 public:
  /// Guards `stmt`.
  explicit ResetOnExit(Statement& stmt) : stmt_(stmt) {}
  ~ResetOnExit() { stmt_.reset(); }
  ResetOnExit(const ResetOnExit&) = delete;
  ResetOnExit& operator=(const ResetOnExit&) = delete;

 private:
  Statement& stmt_;
};

/// A BackendError of the sqlite store.
[[nodiscard]] BackendError sqlite_error(ErrorCode code, const std::string& message);

}  // namespace leader::sqlite
