#include "connection.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace leader::sqlite {
namespace {

using std::chrono::steady_clock;

// The code a caller should react with for a sqlite primary result code other than BUSY.
ErrorCode code_for(int primary) {
  switch (primary) {
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return ErrorCode::failed_precondition;
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_NOMEM:
    case SQLITE_PROTOCOL:
      return ErrorCode::unavailable;
    default:
      return ErrorCode::internal;
  }
}

}  // namespace

BackendError sqlite_error(ErrorCode code, const std::string& message) {
  return BackendError(code, "sqlite", message);
}

Connection::Connection(std::string path) : path_(std::move(path)) {
  constexpr int kFlags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path_.c_str(), &db_, kFlags, nullptr);
  if (rc != SQLITE_OK) {
    std::string detail = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw sqlite_error(ErrorCode::failed_precondition,
                       "cannot open or create database file '" + path_ + "': " + detail +
                           " (check that the directory exists and is writable)");
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_handler(db_, &Connection::on_busy, this);
  sqlite3_progress_handler(db_, 1000, &Connection::on_progress, this);
}

Connection::~Connection() { sqlite3_close_v2(db_); }

void Connection::begin_call(Deadline deadline, Duration busy_timeout) {
  deadline_ = deadline.at();
  busy_until_ = steady_clock::now() + busy_timeout;
  deadline_hit_ = false;
  busy_hit_ = false;
}

int Connection::on_busy(void* self, int count) {
  auto* c = static_cast<Connection*>(self);
  auto now = steady_clock::now();
  if (now >= c->deadline_) {
    c->deadline_hit_ = true;
    return 0;
  }
  if (now >= c->busy_until_) {
    c->busy_hit_ = true;
    return 0;
  }
  // Exponential back-off from 50us to 4ms, never sleeping past either bound.
  auto pause = std::chrono::duration_cast<steady_clock::duration>(std::chrono::microseconds(50) *
                                                                  (1 << std::min(count, 6)));
  pause = std::min({pause, c->deadline_ - now, c->busy_until_ - now});
  std::this_thread::sleep_for(pause);
  return 1;
}

int Connection::on_progress(void* self) {
  auto* c = static_cast<Connection*>(self);
  if (steady_clock::now() < c->deadline_) return 0;
  c->deadline_hit_ = true;
  return 1;
}

void Connection::exec(const char* sql, std::string_view what) {
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(rc, what);
}

void Connection::exec_retrying_busy(const char* sql, std::string_view what) {
  for (int attempt = 0;; ++attempt) {
    const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) return;
    const int primary = rc & 0xff;
    // The busy handler said "give up" (busy_timeout or deadline reached): report that.
    if (primary != SQLITE_BUSY || busy_hit_ || deadline_hit_) fail(rc, what);
    rollback_quietly();
    if (on_busy(this, attempt) == 0) fail(rc, what);  // sleeps its back-off; 0: out of time
  }
}

void Connection::rollback_quietly() noexcept {
  if (sqlite3_get_autocommit(db_) == 0) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void Connection::fail(int rc, std::string_view what) const {
  const int primary = rc & 0xff;
  const std::string where = "database '" + path_ + "': " + std::string(what);
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED || primary == SQLITE_INTERRUPT) {
    if (deadline_hit_ || primary == SQLITE_INTERRUPT)
      throw sqlite_error(ErrorCode::deadline_exceeded,
                         where +
                             " ran out of time (the database was locked by another "
                             "connection or the statement was interrupted at the deadline)");
    throw sqlite_error(ErrorCode::unavailable,
                       where +
                           " failed: the database stayed locked by another connection for "
                           "longer than busy_timeout");
  }
  std::string detail = sqlite3_errmsg(db_);
  ErrorCode code = code_for(primary);
  std::string hint;
  if (detail.find("no such table") != std::string::npos) {
    code = ErrorCode::failed_precondition;
    hint = " (create the schema from docs/sql-schema.md or open with create_schema=true)";
  }
  throw sqlite_error(code, where + " failed: " + detail + " [" + sqlite3_errstr(rc) + "]" + hint);
}

Statement::Statement(Connection& conn, const std::string& sql) : conn_(conn) {
  int rc = sqlite3_prepare_v3(conn.handle(), sql.c_str(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  if (rc != SQLITE_OK) conn.fail(rc, "preparing a statement");
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int index, std::string_view value) {
  int rc = sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()),
                             SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) conn_.fail(rc, "binding a parameter");
  return *this;
}

Statement& Statement::bind(int index, std::int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) conn_.fail(rc, "binding a parameter");
  return *this;
}

Statement& Statement::bind_null(int index) {
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) conn_.fail(rc, "binding a parameter");
  return *this;
}

bool Statement::step(std::string_view what) {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  conn_.fail(rc, what);
}

int Statement::execute(std::string_view what) {
  while (step(what)) {
  }
  return sqlite3_changes(conn_.handle());
}

std::int64_t Statement::int_at(int i) const { return sqlite3_column_int64(stmt_, i); }

std::string Statement::text_at(int i) const {
  const auto* text = sqlite3_column_text(stmt_, i);
  if (text == nullptr) return {};
  return {reinterpret_cast<const char*>(text),
          static_cast<std::size_t>(sqlite3_column_bytes(stmt_, i))};
}

bool Statement::null_at(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }

void Statement::reset() noexcept {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

}  // namespace leader::sqlite
