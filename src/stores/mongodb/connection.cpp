#include "connection.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string_view>

#include "leader/errors.hpp"
#include "stream.hpp"

namespace leader::mongodb {
namespace {

std::string percent_encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

// The URI given to libmongoc: hosts, credentials and the options this store relies on. Retryable
// writes are off (a retried findAndModify is not idempotent); one server selection attempt per
// call (serverSelectionTryOnce); TLS is done by open_stream, not by libmongoc.
std::string libmongoc_uri(const Config& c) {
  std::string u = "mongodb://";
  if (c.user) {
    u += percent_encode(*c.user);
    if (c.password) u += ":" + percent_encode(*c.password);
    u += "@";
  }
  for (std::size_t i = 0; i < c.hosts.size(); ++i) u += (i != 0 ? "," : "") + c.hosts[i];
  u += "/" + percent_encode(c.database) + "?appname=leader&retryWrites=false&retryReads=false";
  u += "&serverSelectionTryOnce=true&connectTimeoutMS=" + std::to_string(c.connect_timeout.count());
  u += "&socketTimeoutMS=" + std::to_string(c.socket_timeout.count());
  if (c.auth_source) u += "&authSource=" + percent_encode(*c.auth_source);
  if (c.replica_set) u += "&replicaSet=" + percent_encode(*c.replica_set);
  return u;
}

bool is_code(const bson_error_t& e, std::initializer_list<uint32_t> codes) {
  return std::find(codes.begin(), codes.end(), e.code) != codes.end();
}

// Server codes (mongo src/mongo/base/error_codes.yml) after which the command was not applied:
// NotWritablePrimary, NotPrimaryNoSecondaryOk, NotPrimaryOrSecondary.
constexpr std::initializer_list<uint32_t> kNotPrimary = {10107, 13435, 13436};
// Interrupted or timed out while running: a write may or may not have been applied.
// ShutdownInProgress, InterruptedAtShutdown, InterruptedDueToReplStateChange, PrimarySteppedDown,
// MaxTimeMSExpired, WriteConcernFailed, ExceededTimeLimit, NetworkTimeout.
constexpr std::initializer_list<uint32_t> kInterrupted = {91, 11600, 11602, 189, 50, 64, 262, 89};
// Unauthorized, AuthenticationFailed, UserNotFound, IllegalOperation (e.g. not a replica set).
constexpr std::initializer_list<uint32_t> kRefused = {13, 18, 11, 20};

bool broken_transport(const bson_error_t& e) {
  return e.domain == MONGOC_ERROR_STREAM || e.domain == MONGOC_ERROR_PROTOCOL ||
         e.domain == MONGOC_ERROR_SERVER_SELECTION;
}

BackendError classify(const bson_error_t& e, const char* what, bool is_write, Deadline deadline,
                      const Config& c) {
  const std::string msg = std::string(what) + ": " + e.message + " (domain " +
                          std::to_string(e.domain) + ", code " + std::to_string(e.code) + ") on '" +
                          c.shown + "'";
  auto fail = [&](ErrorCode code) { return BackendError(code, "mongodb", msg); };
  if (e.domain == MONGOC_ERROR_SERVER_SELECTION) return fail(ErrorCode::unavailable);  // not sent
  if (e.domain == MONGOC_ERROR_STREAM || e.domain == MONGOC_ERROR_PROTOCOL) {
    if (is_write || deadline.expired()) return fail(ErrorCode::deadline_exceeded);
    return fail(ErrorCode::unavailable);
  }
  if (e.domain == MONGOC_ERROR_CLIENT)
    return fail(e.code == MONGOC_ERROR_CLIENT_AUTHENTICATE ? ErrorCode::failed_precondition
                                                           : ErrorCode::internal);
  if (e.domain == MONGOC_ERROR_WRITE_CONCERN) return fail(ErrorCode::deadline_exceeded);
  if (is_code(e, kNotPrimary)) return fail(ErrorCode::unavailable);
  if (is_code(e, kInterrupted))
    return fail(is_write ? ErrorCode::deadline_exceeded : ErrorCode::unavailable);
  if (is_code(e, kRefused)) return fail(ErrorCode::failed_precondition);
  return fail(ErrorCode::internal);
}

void append_write_concern(bson_t* opts, const Config& c, Deadline deadline) {
  bson_t wc;
  BSON_APPEND_DOCUMENT_BEGIN(opts, "writeConcern", &wc);
  if (c.write_concern.find_first_not_of("0123456789") == std::string::npos)
    BSON_APPEND_INT32(&wc, "w", std::stoi(c.write_concern));
  else
    BSON_APPEND_UTF8(&wc, "w", c.write_concern.c_str());
  const auto wtimeout = c.wtimeout.count() > 0 ? c.wtimeout : deadline.remaining();
  BSON_APPEND_INT64(&wc, "wtimeout", std::max<int64_t>(1, wtimeout.count()));
  if (c.journal) BSON_APPEND_BOOL(&wc, "j", true);
  bson_append_document_end(opts, &wc);
}

}  // namespace

// libmongoc logs expected events (a read that timed out, a reconnect) as warnings and debug
// lines on stderr; only errors and critical messages are passed to its default handler.
void quiet_log(mongoc_log_level_t level, const char* domain, const char* message, void* data) {
  if (level <= MONGOC_LOG_LEVEL_ERROR) mongoc_log_default_handler(level, domain, message, data);
}

// A new connection's handshake (hello) waits connectTimeoutMS, which libmongoc fixes per
// client: a client opened for a call with less time left gets that much, but not below this.
constexpr Duration kMinConnectTimeout{100};

struct Connection::Lent {
  Connection* self;
  Borrowed borrowed;
  bool broken = false;
  // A client opened with a shortened connect timeout serves only the call that opened it.
  ~Lent() { self->give_back(borrowed.client, broken || borrowed.shortened); }
};

Connection::Connection(Config config) : config_(std::move(config)) {
  static std::once_flag log_once;
  std::call_once(log_once, [] { mongoc_log_set_handler(quiet_log, nullptr); });
  bson_error_t error;
  uri_ = mongoc_uri_new_with_error(libmongoc_uri(config_).c_str(), &error);
  if (uri_ == nullptr)
    throw InvalidArgument("store URI '" + config_.shown +
                          "' is refused by libmongoc: " + error.message);
}

Connection::~Connection() {
  for (mongoc_client_t* c : idle_) mongoc_client_destroy(c);
  mongoc_uri_destroy(uri_);
}

Connection::Borrowed Connection::borrow(Deadline deadline) {
  std::unique_lock lock(mu_);
  while (idle_.empty() && open_ >= config_.pool_size) {
    if (cv_.wait_until(lock, deadline.at()) == std::cv_status::timeout && idle_.empty() &&
        open_ >= config_.pool_size)
      throw BackendError(ErrorCode::deadline_exceeded, "mongodb",
                         "no free connection in the pool before the deadline");
  }
  if (!idle_.empty()) {
    mongoc_client_t* c = idle_.back();
    idle_.pop_back();
    return {c, false};
  }
  ++open_;
  lock.unlock();
  const Duration connect =
      std::min(config_.connect_timeout, std::max(kMinConnectTimeout, deadline.remaining()));
  mongoc_client_t* c = nullptr;
  const bool shortened = connect < config_.connect_timeout;
  if (shortened) {
    mongoc_uri_t* uri = mongoc_uri_copy(uri_);
    mongoc_uri_set_option_as_int32(uri, MONGOC_URI_CONNECTTIMEOUTMS,
                                   static_cast<int32_t>(connect.count()));
    c = mongoc_client_new_from_uri(uri);
    mongoc_uri_destroy(uri);
  } else {
    c = mongoc_client_new_from_uri(uri_);
  }
  if (c == nullptr) {
    give_back(nullptr, true);
    throw BackendError(ErrorCode::internal, "mongodb", "mongoc_client_new_from_uri failed");
  }
  mongoc_client_set_error_api(c, MONGOC_ERROR_API_VERSION_2);
  mongoc_client_set_stream_initiator(c, open_stream, &config_);
  return {c, shortened};
}

void Connection::give_back(mongoc_client_t* client, bool broken) {
  if (broken && client != nullptr) mongoc_client_destroy(client);  // no libmongoc cooldown
  std::lock_guard lock(mu_);
  if (broken)
    --open_;
  else
    idle_.push_back(client);
  cv_.notify_one();
}

DocPtr Connection::run(const char* what, bson_t* command, bool is_write, Deadline deadline) {
  if (deadline.expired())
    throw BackendError(ErrorCode::deadline_exceeded, "mongodb",
                       std::string(what) + ": the deadline passed before the call was sent");
  bson_iter_t first;
  const bool get_more = bson_iter_init(&first, command) && bson_iter_next(&first) &&
                        std::string_view(bson_iter_key(&first)) == "getMore";
  if (!get_more)  // the server refuses maxTimeMS on getMore of a non-tailable cursor
    BSON_APPEND_INT64(command, "maxTimeMS", std::max<int64_t>(1, deadline.remaining().count()));
  Lent lent{this, borrow(deadline)};
  mongoc_client_t* client = lent.borrowed.client;
  CallDeadline bound(deadline);
  auto reply = std::make_unique<Doc>();
  bson_error_t error;
  Doc opts;
  bool ok = false;
  if (is_write) {
    append_write_concern(&opts.b, config_, deadline);
    ok = mongoc_client_write_command_with_opts(client, config_.database.c_str(), command, &opts.b,
                                               &reply->b, &error);
  } else {
    ok = mongoc_client_read_command_with_opts(client, config_.database.c_str(), command, nullptr,
                                              &opts.b, &reply->b, &error);
  }
  if (ok) return reply;
  lent.broken = broken_transport(error);
  if (error.code == 11000 && error.domain == MONGOC_ERROR_SERVER) return nullptr;
  throw classify(error, what, is_write, deadline, config_);
}

std::optional<DocPtr> Connection::write(const char* what, bson_t* command, Deadline deadline) {
  DocPtr reply = run(what, command, true, deadline);
  if (!reply) return std::nullopt;  // duplicate key as a command error (findAndModify)
  bson_iter_t it;
  if (bson_iter_init_find(&it, &reply->b, "writeConcernError"))
    throw BackendError(ErrorCode::deadline_exceeded, "mongodb",
                       std::string(what) + ": the write concern was not confirmed " +
                           "(writeConcernError); the write may or may not be durable");
  if (auto code = get_int(&reply->b, "writeErrors.0.code")) {
    if (*code == 11000) return std::nullopt;
    bson_error_t e{};
    e.domain = MONGOC_ERROR_SERVER;
    e.code = static_cast<uint32_t>(*code);
    std::snprintf(e.message, sizeof e.message, "write error %lld", static_cast<long long>(*code));
    throw classify(e, what, true, deadline, config_);
  }
  return reply;
}

DocPtr Connection::read(const char* what, bson_t* command, Deadline deadline) {
  DocPtr reply = run(what, command, false, deadline);
  if (!reply)
    throw BackendError(ErrorCode::internal, "mongodb",
                       std::string(what) + ": unexpected duplicate key error on a read");
  return reply;
}

std::optional<std::int64_t> get_int(const bson_t* doc, const char* dotted) {
  bson_iter_t it;
  bson_iter_t found;
  if (!bson_iter_init(&it, doc) || !bson_iter_find_descendant(&it, dotted, &found))
    return std::nullopt;
  if (BSON_ITER_HOLDS_INT32(&found) || BSON_ITER_HOLDS_INT64(&found) ||
      BSON_ITER_HOLDS_DOUBLE(&found))
    return bson_iter_as_int64(&found);
  return std::nullopt;
}

}  // namespace leader::mongodb
