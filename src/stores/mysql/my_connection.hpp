#pragma once
/// @file my_connection.hpp
/// One MariaDB Connector/C session in non-blocking mode: connecting, preparing and executing
/// statements are driven with poll() on the socket until a Deadline. Prepared statements only
/// (the text protocol is used for schema DDL, which holds no user value). Internal to
/// leader::mysql.

#include <mysql.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "leader/errors.hpp"
#include "leader/time.hpp"

namespace leader::mysql {

/// The scheme used in errors of this store.
inline constexpr const char* kScheme = "mysql";

/// A bound parameter: NULL, an integer or a string.
using Param = std::variant<std::monostate, std::int64_t, std::string>;

/// Rows of a result, every value as text (nullopt for NULL), and the affected-row count.
struct Rows {
  std::vector<std::vector<std::optional<std::string>>> rows;
  std::uint64_t affected = 0;
};

/// How to reach the server.
struct ConnectOptions {
  std::string host = "127.0.0.1";
  unsigned port = 3306;
  std::optional<std::string> socket;  ///< Unix socket path instead of TCP
  std::optional<std::string> user;
  std::optional<std::string> password;
  std::string database;
  bool tls = false;        ///< require TLS
  bool tls_verify = true;  ///< verify the server certificate and host name (with tls)
  std::optional<std::string> tls_ca, tls_cert, tls_key;
  Duration statement_timeout{10'000};  ///< server-side max_statement_time backstop
};

/// Maps a MariaDB client or server error number to how the caller should react.
ErrorCode classify_errno(unsigned err);

/// A connected session. Not thread-safe: the pool hands it to one caller at a time.
class Connection {
 public:
  /// Connects before `deadline`; throws BackendError.
  static std::unique_ptr<Connection> open(const ConnectOptions& options, Deadline deadline);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Prepares `sql` once under `name` on this connection.
  void prepare(const std::string& name, const std::string& sql, Deadline deadline);
  /// True when `name` was prepared successfully on this connection.
  [[nodiscard]] bool prepared(const std::string& name) const { return prepared_.contains(name); }
  /// Executes the prepared statement `name` and reads every result (CALL included).
  Rows execute(const std::string& name, const std::vector<Param>& params, Deadline deadline);
  /// Runs one text-protocol statement (DDL; no user values) and discards any result.
  Rows query(const std::string& sql, Deadline deadline);

  /// True once the connection cannot be reused (I/O error, timeout, server gone).
  [[nodiscard]] bool broken() const { return broken_; }
  /// Cheap liveness check of an idle connection: notices a server that closed it.
  [[nodiscard]] bool idle_and_alive();

 private:
  explicit Connection(MYSQL* mysql) : mysql_(mysql) {}
  template <class Cont>
  void drive(int status, Deadline deadline, const char* what, Cont&& cont);
  [[noreturn]] void fail(const char* what, unsigned err, const char* message);
  [[noreturn]] void fail_stmt(const char* what, MYSQL_STMT* stmt);
  Rows read_results(MYSQL_STMT* stmt, Deadline deadline);
  void fetch_rows(MYSQL_STMT* stmt, Rows& out);

  MYSQL* mysql_;
  bool broken_ = false;
  std::map<std::string, MYSQL_STMT*> statements_;
  std::set<std::string> prepared_;
};

}  // namespace leader::mysql
