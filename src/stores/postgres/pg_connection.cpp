#include "pg_connection.hpp"

#include <poll.h>

#include <cstring>
#include <string_view>

namespace leader::postgres {
namespace {

std::string trimmed(const char* message) {
  std::string s = message ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (auto& c : s)
    if (c == '\n') c = ' ';
  return s;
}

// Connection failures that retrying will not fix.
bool is_configuration_failure(std::string_view message) {
  for (std::string_view needle :
       {"authentication failed", "no password supplied", "does not exist", "no pg_hba.conf entry",
        "permission denied", "invalid URI", "invalid connection option", "invalid sslmode"}) {
    if (message.find(needle) != std::string_view::npos) return true;
  }
  return false;
}

void ignore_notice(void*, const char*) {}

}  // namespace

ErrorCode classify_sqlstate(const char* sqlstate) {
  std::string_view s = sqlstate ? sqlstate : "";
  if (s.size() != 5) return ErrorCode::internal;
  std::string_view cls = s.substr(0, 2);
  if (s == "57014") return ErrorCode::deadline_exceeded;  // statement_timeout / cancel
  if (s == "55P03") return ErrorCode::deadline_exceeded;  // lock_timeout
  if (cls == "08" || cls == "57" || cls == "53" || cls == "40") return ErrorCode::unavailable;
  // Read-only transaction: the session's server turned read-only after the connection was made
  // (default_transaction_read_only set for a switchover). The write was refused, not applied; the
  // connection is dropped so that the next call lets libpq pick the read-write host again. A
  // standby reached at connection time is refused by set_up() (failed_precondition).
  if (s == "25006") return ErrorCode::unavailable;
  if (cls == "28" || cls == "3D" || cls == "3F" || s == "42P01" || s == "42501" || s == "42703")
    return ErrorCode::failed_precondition;
  if (cls == "22") return ErrorCode::invalid_argument;
  return ErrorCode::internal;
}

std::unique_ptr<Connection> Connection::open(const std::string& conninfo, Deadline deadline) {
  const char* keywords[] = {"dbname", "fallback_application_name", nullptr};
  const char* values[] = {conninfo.c_str(), "leader", nullptr};
  PGconn* raw = PQconnectStartParams(keywords, values, 1);
  if (raw == nullptr) throw BackendError(ErrorCode::internal, kScheme, "out of memory");
  std::unique_ptr<Connection> conn(new Connection(raw));
  if (PQstatus(raw) == CONNECTION_BAD) {
    std::string message = trimmed(PQerrorMessage(raw));
    conn->broken_ = true;
    throw BackendError(
        is_configuration_failure(message) ? ErrorCode::failed_precondition : ErrorCode::unavailable,
        kScheme, "cannot connect: " + message);
  }
  PostgresPollingStatusType status = PGRES_POLLING_WRITING;
  while (status != PGRES_POLLING_OK) {
    if (status == PGRES_POLLING_FAILED) {
      std::string message = trimmed(PQerrorMessage(raw));
      conn->broken_ = true;
      throw BackendError(is_configuration_failure(message) ? ErrorCode::failed_precondition
                                                           : ErrorCode::unavailable,
                         kScheme, "cannot connect: " + message);
    }
    conn->wait_socket(status == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline, "connect");
    status = PQconnectPoll(raw);
  }
  PQsetNoticeProcessor(raw, ignore_notice, nullptr);
  if (PQsetnonblocking(raw, 1) != 0 || PQenterPipelineMode(raw) != 1)
    conn->fail(ErrorCode::internal, "cannot enter non-blocking pipeline mode");
  return conn;
}

Connection::~Connection() { PQfinish(conn_); }

void Connection::fail(ErrorCode code, const std::string& what) {
  broken_ = true;
  throw BackendError(code, kScheme, what + ": " + trimmed(PQerrorMessage(conn_)));
}

void Connection::wait_socket(short events, Deadline deadline, const char* what) {
  int fd = PQsocket(conn_);
  if (fd < 0) fail(ErrorCode::unavailable, std::string(what) + ": no socket");
  for (;;) {
    if (deadline.expired()) {
      broken_ = true;
      throw BackendError(ErrorCode::deadline_exceeded, kScheme,
                         std::string(what) + ": no answer from the server before the deadline");
    }
    pollfd p{fd, events, 0};
    int ms = static_cast<int>(deadline.remaining().count()) + 1;
    int n = ::poll(&p, 1, ms);
    if (n > 0) return;
    if (n < 0 && errno != EINTR) fail(ErrorCode::unavailable, std::string(what) + ": poll failed");
  }
}

void Connection::flush(Deadline deadline) {
  for (;;) {
    int r = PQflush(conn_);
    if (r == 0) return;
    if (r < 0) fail(ErrorCode::unavailable, "cannot send to the server");
    wait_socket(POLLOUT | POLLIN, deadline, "send");
    if (!PQconsumeInput(conn_)) fail(ErrorCode::unavailable, "connection lost");
  }
}

PGresult* Connection::next_result(Deadline deadline) {
  while (PQisBusy(conn_)) {
    wait_socket(POLLIN, deadline, "statement");
    if (!PQconsumeInput(conn_)) fail(ErrorCode::unavailable, "connection lost");
  }
  return PQgetResult(conn_);
}

namespace {
std::string error_message(const PGresult* r) {
  std::string message = trimmed(PQresultErrorMessage(r));
  const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
  if (state != nullptr && std::string_view(state) == "25006")
    message +=
        " (the server is read-only: nothing was written; with a primary and standbys, "
        "name every host and target_session_attrs=read-write)";
  return message;
}
}  // namespace

std::vector<Result> Connection::collect(std::size_t count, Deadline deadline) {
  std::vector<Result> results;
  std::optional<BackendError> first_error;
  for (std::size_t i = 0; i < count; ++i) {
    Result r(next_result(deadline), &PQclear);
    if (!r) fail(ErrorCode::unavailable, "connection lost while reading results");
    ExecStatusType st = PQresultStatus(r.get());
    if (st == PGRES_FATAL_ERROR && !first_error) {
      first_error.emplace(classify_sqlstate(PQresultErrorField(r.get(), PG_DIAG_SQLSTATE)), kScheme,
                          error_message(r.get()));
    }
    while (PGresult* extra = next_result(deadline)) PQclear(extra);  // NULL ends this query
    results.push_back(std::move(r));
  }
  Result sync(next_result(deadline), &PQclear);
  if (!sync || PQresultStatus(sync.get()) != PGRES_PIPELINE_SYNC)
    fail(ErrorCode::internal, "protocol out of step (no pipeline sync)");
  if (first_error) {
    if (first_error->code() == ErrorCode::unavailable) broken_ = true;
    throw *first_error;
  }
  return results;
}

void Connection::queue(const std::vector<Call>& calls) {
  std::vector<const char*> values;
  for (const auto& call : calls) {
    values.clear();
    for (const auto& p : call.params) values.push_back(p ? p->c_str() : nullptr);
    int n = static_cast<int>(values.size());
    int ok = call.prepared ? PQsendQueryPrepared(conn_, call.statement.c_str(), n, values.data(),
                                                 nullptr, nullptr, 0)
                           : PQsendQueryParams(conn_, call.statement.c_str(), n, nullptr,
                                               values.data(), nullptr, nullptr, 0);
    if (!ok) fail(ErrorCode::unavailable, "cannot queue statement");
  }
  if (!PQpipelineSync(conn_)) fail(ErrorCode::unavailable, "cannot queue sync");
}

std::vector<Result> Connection::run(const std::vector<Call>& calls, Deadline deadline) {
  queue(calls);
  flush(deadline);
  return collect(calls.size(), deadline);
}

std::vector<std::vector<Result>> Connection::run_each(
    const std::vector<std::vector<Call>>& transactions, Deadline deadline) {
  for (const auto& calls : transactions) queue(calls);
  flush(deadline);
  std::vector<std::vector<Result>> out;
  for (std::size_t i = 0; i < transactions.size(); ++i) {
    try {
      out.push_back(collect(transactions[i].size(), deadline));
    } catch (const BackendError&) {
      // Each list has a Sync of its own, so the server runs the later ones after a failed one:
      // read their answers too, so that the connection stays in step for its next use.
      if (!broken_) {
        for (std::size_t j = i + 1; j < transactions.size(); ++j) {
          try {
            (void)collect(transactions[j].size(), deadline);
          } catch (const BackendError&) {
            if (broken_) break;
          }
        }
      }
      throw;
    }
  }
  return out;
}

std::vector<std::string> Connection::take_notifications(const std::string& channel) {
  if (!PQconsumeInput(conn_)) fail(ErrorCode::unavailable, "connection lost");
  std::vector<std::string> payloads;
  while (PGnotify* n = PQnotifies(conn_)) {
    if (channel == n->relname) payloads.emplace_back(n->extra);
    PQfreemem(n);
  }
  if (PQstatus(conn_) != CONNECTION_OK) fail(ErrorCode::unavailable, "connection lost");
  return payloads;
}

void Connection::prepare(const std::vector<std::pair<std::string, std::string>>& statements,
                         Deadline deadline) {
  for (const auto& [name, sql] : statements) {
    if (!PQsendPrepare(conn_, name.c_str(), sql.c_str(), 0, nullptr))
      fail(ErrorCode::unavailable, "cannot queue prepare");
  }
  if (!PQpipelineSync(conn_)) fail(ErrorCode::unavailable, "cannot queue sync");
  flush(deadline);
  collect(statements.size(), deadline);
}

void Connection::run_script(const std::string& sql, Deadline deadline) {
  if (PQexitPipelineMode(conn_) != 1) fail(ErrorCode::internal, "cannot leave pipeline mode");
  if (!PQsendQuery(conn_, sql.c_str())) fail(ErrorCode::unavailable, "cannot send script");
  flush(deadline);
  std::optional<BackendError> first_error;
  while (PGresult* raw = next_result(deadline)) {
    Result r(raw, &PQclear);
    if (PQresultStatus(raw) == PGRES_FATAL_ERROR && !first_error)
      first_error.emplace(classify_sqlstate(PQresultErrorField(raw, PG_DIAG_SQLSTATE)), kScheme,
                          trimmed(PQresultErrorMessage(raw)));
  }
  if (PQenterPipelineMode(conn_) != 1) fail(ErrorCode::internal, "cannot enter pipeline mode");
  if (first_error) {
    broken_ = true;  // a failed script may leave an aborted transaction block open
    throw *first_error;
  }
}

bool Connection::hot_standby() const {
  const char* v = PQparameterStatus(conn_, "in_hot_standby");  // reported by servers >= 14
  return v != nullptr && std::string_view(v) == "on";
}

bool Connection::idle_and_alive() {
  if (broken_ || PQstatus(conn_) != CONNECTION_OK) return false;
  pollfd p{PQsocket(conn_), POLLIN, 0};
  if (p.fd < 0) return false;
  // An idle session we never asked anything of is readable only when the server said goodbye
  // (shutdown, restart, idle timeout: a FATAL notice then EOF) or sent an unsolicited parameter
  // report; either way a fresh connection is the safe choice.
  if (::poll(&p, 1, 0) != 0) return false;
  return PQtransactionStatus(conn_) == PQTRANS_IDLE;
}

}  // namespace leader::postgres
