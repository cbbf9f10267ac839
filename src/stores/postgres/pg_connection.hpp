#pragma once
/// @file pg_connection.hpp
/// One libpq connection in non-blocking pipeline mode: every round trip (one or several
/// statements followed by a Sync, run by the server as one implicit transaction) is bounded by a
/// Deadline through poll() on PQsocket. Internal to leader::postgres.

#include <libpq-fe.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "leader/errors.hpp"
#include "leader/time.hpp"

namespace leader::postgres {

/// The scheme used in errors of this store.
inline constexpr const char* kScheme = "postgres";

/// Owns a PGresult.
using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

/// One statement of a round trip: a prepared statement name, or SQL text when `prepared` is false.
struct Call {
  std::string statement;
  std::vector<std::optional<std::string>> params;
  bool prepared = true;
};

/// Maps a SQLSTATE to how the caller should react.
ErrorCode classify_sqlstate(const char* sqlstate);

/// A connected session. Not thread-safe: the pool hands it to one caller at a time.
class Connection {
 public:
  /// Connects with libpq connection string/URI `conninfo` before `deadline`; throws BackendError.
  static std::unique_ptr<Connection> open(const std::string& conninfo, Deadline deadline);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Sends `calls` plus a Sync in one write and returns one result per call. The server runs them
  /// as one implicit transaction. Throws BackendError; a timeout or I/O failure breaks the
  /// connection (see `broken()`), an SQL error leaves it usable.
  std::vector<Result> run(const std::vector<Call>& calls, Deadline deadline);

  /// As run(), for several transactions in one round trip: each list of calls is followed by a
  /// Sync of its own, so the server commits each before it starts the next. Returns the results
  /// of each list; an SQL error throws (the later lists are then skipped by the server).
  std::vector<std::vector<Result>> run_each(const std::vector<std::vector<Call>>& transactions,
                                            Deadline deadline);

  /// Reads what the server has sent without blocking and returns the payloads of the
  /// notifications (LISTEN) on `channel` that arrived since the last call, libpq's queue
  /// drained. Throws BackendError(unavailable) and breaks the connection when it was lost.
  std::vector<std::string> take_notifications(const std::string& channel);

  /// The connection's socket, for poll() (-1 when there is none).
  [[nodiscard]] int socket() const { return PQsocket(conn_); }

  /// Sends a simple-protocol SQL script (no parameters, may hold several statements).
  void run_script(const std::string& sql, Deadline deadline);

  /// Prepares every (name, sql) statement in one round trip.
  void prepare(const std::vector<std::pair<std::string, std::string>>& statements,
               Deadline deadline);

  /// True once the connection cannot be reused (I/O error, timeout, server gone).
  [[nodiscard]] bool broken() const { return broken_; }

  /// True when the server said (ParameterStatus in_hot_standby, PostgreSQL 14+) that it is a
  /// standby in recovery: it refuses every write.
  [[nodiscard]] bool hot_standby() const;

  /// Cheap liveness check of an idle connection: notices a server that closed it.
  [[nodiscard]] bool idle_and_alive();

 private:
  explicit Connection(PGconn* conn) : conn_(conn) {}
  void wait_socket(short events, Deadline deadline, const char* what);
  void flush(Deadline deadline);
  PGresult* next_result(Deadline deadline);
  void queue(const std::vector<Call>& calls);
  std::vector<Result> collect(std::size_t count, Deadline deadline);
  [[noreturn]] void fail(ErrorCode code, const std::string& what);

  PGconn* conn_;
  bool broken_ = false;
};

}  // namespace leader::postgres
