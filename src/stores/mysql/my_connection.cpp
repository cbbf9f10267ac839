#include "my_connection.hpp"

#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace leader::mysql {
namespace {

constexpr unsigned long kColumnBuffer = 256;

bool is_client_error(unsigned err) { return err >= 2000 && err < 3000; }

// Wait flags -> poll events.
short poll_events(int status) {
  short events = 0;
  if (status & MYSQL_WAIT_READ) events |= POLLIN;
  if (status & MYSQL_WAIT_WRITE) events |= POLLOUT;
  if (status & MYSQL_WAIT_EXCEPT) events |= POLLPRI;
  return events;
}

int ready_flags(short revents) {
  int ready = 0;
  if (revents & (POLLIN | POLLERR | POLLHUP)) ready |= MYSQL_WAIT_READ;
  if (revents & (POLLOUT | POLLERR | POLLHUP)) ready |= MYSQL_WAIT_WRITE;
  if (revents & POLLPRI) ready |= MYSQL_WAIT_EXCEPT;
  return ready;
}

}  // namespace

ErrorCode classify_errno(unsigned err) {
  switch (err) {
    case 1969:  // ER_STATEMENT_TIMEOUT (max_statement_time)
      return ErrorCode::deadline_exceeded;
    case 1040:
    case 1053:
    case 1152:
    case 1153:
    case 1158:
    case 1159:
    case 1160:
    case 1161:
    case 1205:
    case 1213:
    case 1927:
    case 4031:
      return ErrorCode::unavailable;
    case 1044:
    case 1045:
    case 1049:
    case 1142:
    case 1143:
    case 1146:
    case 1227:
    case 1290:
    case 1305:
    case 1370:
    case 1698:
    case 2026:
      return ErrorCode::failed_precondition;
    case 1366:
    case 1406:
      return ErrorCode::invalid_argument;
    default:
      return is_client_error(err) ? ErrorCode::unavailable : ErrorCode::internal;
  }
}

std::unique_ptr<Connection> Connection::open(const ConnectOptions& o, Deadline deadline) {
  MYSQL* m = mysql_init(nullptr);
  if (m == nullptr) throw BackendError(ErrorCode::internal, kScheme, "out of memory");
  std::unique_ptr<Connection> conn(new Connection(m));
  mysql_options(m, MYSQL_OPT_NONBLOCK, nullptr);
  mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  const long long st_ms = o.statement_timeout.count();
  const std::string init = "SET SESSION max_statement_time = " + std::to_string(st_ms / 1000) +
                           "." + std::to_string(st_ms % 1000 + 1000).substr(1) +
                           ", innodb_lock_wait_timeout = " + std::to_string(st_ms / 1000 + 1);
  mysql_options(m, MYSQL_INIT_COMMAND, init.c_str());
  if (o.tls) {
    my_bool enforce = 1, verify = o.tls_verify ? 1 : 0;
    mysql_optionsv(m, MYSQL_OPT_SSL_ENFORCE, &enforce);
    mysql_optionsv(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
    if (o.tls_ca) mysql_optionsv(m, MYSQL_OPT_SSL_CA, o.tls_ca->c_str());
    if (o.tls_cert) mysql_optionsv(m, MYSQL_OPT_SSL_CERT, o.tls_cert->c_str());
    if (o.tls_key) mysql_optionsv(m, MYSQL_OPT_SSL_KEY, o.tls_key->c_str());
  }
  auto c_str = [](const std::optional<std::string>& s) { return s ? s->c_str() : nullptr; };
  MYSQL* ret = nullptr;
  int status =
      mysql_real_connect_start(&ret, m, o.socket ? nullptr : o.host.c_str(), c_str(o.user),
                               c_str(o.password), o.database.empty() ? nullptr : o.database.c_str(),
                               o.port, c_str(o.socket), CLIENT_FOUND_ROWS | CLIENT_MULTI_RESULTS);
  conn->drive(status, deadline, "connect",
              [&](int ready) { return mysql_real_connect_cont(&ret, m, ready); });
  if (ret == nullptr) conn->fail("cannot connect", mysql_errno(m), mysql_error(m));
  // libmariadb does not mark its socket close-on-exec (libpq does): child processes must not
  // inherit store connections.
  if (int fd = mysql_get_socket(m); fd >= 0)
    ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC);
  return conn;
}

Connection::~Connection() {
  mysql_close(mysql_);  // aborts an unfinished non-blocking operation; detaches statements
  for (auto& [name, stmt] : statements_) mysql_stmt_close(stmt);
}

void Connection::fail(const char* what, unsigned err, const char* message) {
  ErrorCode code = classify_errno(err);
  if (is_client_error(err) || code == ErrorCode::unavailable) broken_ = true;
  throw BackendError(
      code, kScheme,
      std::string(what) + ": " + (message ? message : "") + " (" + std::to_string(err) + ")");
}

void Connection::fail_stmt(const char* what, MYSQL_STMT* stmt) {
  fail(what, mysql_stmt_errno(stmt), mysql_stmt_error(stmt));
}

template <class Cont>
void Connection::drive(int status, Deadline deadline, const char* what, Cont&& cont) {
  while (status != 0) {
    if (deadline.expired()) {
      broken_ = true;
      throw BackendError(ErrorCode::deadline_exceeded, kScheme,
                         std::string(what) + ": no answer from the server before the deadline");
    }
    int ms = static_cast<int>(deadline.remaining().count()) + 1;
    if (status & MYSQL_WAIT_TIMEOUT)
      ms = std::min(ms, static_cast<int>(mysql_get_timeout_value_ms(mysql_)));
    pollfd p{mysql_get_socket(mysql_), poll_events(status), 0};
    int n = ::poll(&p, 1, ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      broken_ = true;
      throw BackendError(ErrorCode::unavailable, kScheme, std::string(what) + ": poll failed");
    }
    int ready = n > 0 ? ready_flags(p.revents) : 0;
    if (n == 0) {
      if (!(status & MYSQL_WAIT_TIMEOUT)) continue;
      ready = MYSQL_WAIT_TIMEOUT;
    }
    status = cont(ready);
  }
}

void Connection::prepare(const std::string& name, const std::string& sql, Deadline deadline) {
  MYSQL_STMT* stmt = mysql_stmt_init(mysql_);
  if (stmt == nullptr) fail("cannot create a statement", mysql_errno(mysql_), mysql_error(mysql_));
  statements_[name] = stmt;  // closed by the destructor, also on failure
  int ret = 0;
  drive(mysql_stmt_prepare_start(&ret, stmt, sql.c_str(), sql.size()), deadline, "prepare",
        [&](int ready) { return mysql_stmt_prepare_cont(&ret, stmt, ready); });
  if (ret != 0) fail_stmt("cannot prepare a statement", stmt);
  prepared_.insert(name);
}

Rows Connection::execute(const std::string& name, const std::vector<Param>& params,
                         Deadline deadline) {
  MYSQL_STMT* stmt = statements_.at(name);
  std::vector<MYSQL_BIND> binds(params.size());
  std::vector<long long> ints(params.size());
  std::vector<unsigned long> lengths(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    MYSQL_BIND& b = binds[i];
    std::memset(&b, 0, sizeof b);
    if (const auto* v = std::get_if<std::int64_t>(&params[i])) {
      ints[i] = *v;
      b.buffer_type = MYSQL_TYPE_LONGLONG;
      b.buffer = &ints[i];
    } else if (const auto* s = std::get_if<std::string>(&params[i])) {
      lengths[i] = s->size();
      b.buffer_type = MYSQL_TYPE_STRING;
      b.buffer = const_cast<char*>(s->data());
      b.buffer_length = s->size();
      b.length = &lengths[i];
    } else {
      b.buffer_type = MYSQL_TYPE_NULL;
    }
  }
  if (mysql_stmt_bind_param(stmt, binds.data())) fail_stmt("cannot bind parameters", stmt);
  int ret = 0;
  drive(mysql_stmt_execute_start(&ret, stmt), deadline, "execute",
        [&](int ready) { return mysql_stmt_execute_cont(&ret, stmt, ready); });
  if (ret != 0) fail_stmt("statement failed", stmt);
  return read_results(stmt, deadline);
}

Rows Connection::read_results(MYSQL_STMT* stmt, Deadline deadline) {
  Rows out;
  out.affected = mysql_stmt_affected_rows(stmt);
  for (;;) {
    if (mysql_stmt_field_count(stmt) > 0) {
      int ret = 0;
      drive(mysql_stmt_store_result_start(&ret, stmt), deadline, "read result",
            [&](int ready) { return mysql_stmt_store_result_cont(&ret, stmt, ready); });
      if (ret != 0) fail_stmt("cannot read the result", stmt);
      fetch_rows(stmt, out);
      mysql_stmt_free_result(stmt);
    }
    if (!mysql_stmt_more_results(stmt)) break;
    int ret = 0;
    drive(mysql_stmt_next_result_start(&ret, stmt), deadline, "next result",
          [&](int ready) { return mysql_stmt_next_result_cont(&ret, stmt, ready); });
    if (ret > 0) fail_stmt("cannot read the next result", stmt);
    if (ret < 0) break;
  }
  return out;
}

void Connection::fetch_rows(MYSQL_STMT* stmt, Rows& out) {
  const unsigned n = mysql_stmt_field_count(stmt);
  std::vector<MYSQL_BIND> binds(n);
  std::vector<std::string> buffers(n, std::string(kColumnBuffer, '\0'));
  std::vector<unsigned long> lengths(n);
  std::vector<my_bool> nulls(n), errors(n);
  for (unsigned i = 0; i < n; ++i) {
    std::memset(&binds[i], 0, sizeof binds[i]);
    binds[i].buffer_type = MYSQL_TYPE_STRING;
    binds[i].buffer = buffers[i].data();
    binds[i].buffer_length = kColumnBuffer;
    binds[i].length = &lengths[i];
    binds[i].is_null = &nulls[i];
    binds[i].error = &errors[i];
  }
  if (mysql_stmt_bind_result(stmt, binds.data())) fail_stmt("cannot bind the result", stmt);
  for (;;) {
    int r = mysql_stmt_fetch(stmt);
    if (r == MYSQL_NO_DATA) return;
    if (r == 1) fail_stmt("cannot fetch a row", stmt);
    auto& row = out.rows.emplace_back(n);
    for (unsigned i = 0; i < n; ++i) {
      if (nulls[i]) continue;
      if (lengths[i] < kColumnBuffer) {
        row[i] = std::string(buffers[i].data(), lengths[i]);
        continue;
      }
      std::string big(lengths[i] + 1, '\0');  // truncated: fetch the whole column again
      MYSQL_BIND b;
      std::memset(&b, 0, sizeof b);
      b.buffer_type = MYSQL_TYPE_STRING;
      b.buffer = big.data();
      b.buffer_length = big.size();
      unsigned long len = 0;
      b.length = &len;
      if (mysql_stmt_fetch_column(stmt, &b, i, 0)) fail_stmt("cannot fetch a column", stmt);
      big.resize(len);
      row[i] = std::move(big);
    }
  }
}

Rows Connection::query(const std::string& sql, Deadline deadline) {
  int ret = 0;
  drive(mysql_real_query_start(&ret, mysql_, sql.c_str(), sql.size()), deadline, "query",
        [&](int ready) { return mysql_real_query_cont(&ret, mysql_, ready); });
  if (ret != 0) fail("statement failed", mysql_errno(mysql_), mysql_error(mysql_));
  Rows out;
  out.affected = mysql_affected_rows(mysql_);
  if (mysql_field_count(mysql_) == 0) return out;
  MYSQL_RES* res = nullptr;
  drive(mysql_store_result_start(&res, mysql_), deadline, "read result",
        [&](int ready) { return mysql_store_result_cont(&res, mysql_, ready); });
  if (res == nullptr) fail("cannot read the result", mysql_errno(mysql_), mysql_error(mysql_));
  const unsigned n = mysql_num_fields(res);
  while (MYSQL_ROW r = mysql_fetch_row(res)) {
    unsigned long* lens = mysql_fetch_lengths(res);
    auto& row = out.rows.emplace_back(n);
    for (unsigned i = 0; i < n; ++i)
      if (r[i]) row[i] = std::string(r[i], lens[i]);
  }
  mysql_free_result(res);
  return out;
}

bool Connection::idle_and_alive() {
  if (broken_) return false;
  pollfd p{mysql_get_socket(mysql_), POLLIN, 0};
  if (p.fd < 0) return false;
  // The server sends nothing to an idle session unless it is closing it (shutdown, restart,
  // wait_timeout, KILL): a readable socket means a new connection is needed.
  return ::poll(&p, 1, 0) == 0;
}

}  // namespace leader::mysql
