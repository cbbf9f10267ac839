#include "stream.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string>

namespace leader::mongodb {
namespace {

thread_local std::optional<TimePoint> t_deadline;

// A type number outside libmongoc's own (MONGOC_STREAM_SOCKET .. MONGOC_STREAM_TLS).
constexpr int kDeadlineStreamType = 0x4c44;

// libmongoc's timeout convention: < 0 waits forever, 0 does not block. Returns the timeout
// bounded by the call's deadline, or nullopt when the deadline has passed.
std::optional<int32_t> bounded(int32_t timeout_ms) {
  if (!t_deadline || timeout_ms == 0) return timeout_ms;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        *t_deadline - std::chrono::steady_clock::now())
                        .count();
  if (left <= 0) return std::nullopt;
  const auto cap = static_cast<int32_t>(std::min<long long>(left, INT32_MAX));
  return timeout_ms < 0 ? cap : std::min(timeout_ms, cap);
}

struct DeadlineStream {
  mongoc_stream_t vtable;  // first member: libmongoc sees a mongoc_stream_t*
  mongoc_stream_t* inner;
};

mongoc_stream_t* inner_of(mongoc_stream_t* s) {
  return reinterpret_cast<DeadlineStream*>(s)->inner;
}

void destroy(mongoc_stream_t* s) {
  mongoc_stream_destroy(inner_of(s));
  delete reinterpret_cast<DeadlineStream*>(s);
}
void failed(mongoc_stream_t* s) {
  mongoc_stream_failed(inner_of(s));
  delete reinterpret_cast<DeadlineStream*>(s);
}
int close_stream(mongoc_stream_t* s) { return mongoc_stream_close(inner_of(s)); }
int flush(mongoc_stream_t* s) { return mongoc_stream_flush(inner_of(s)); }
ssize_t writev(mongoc_stream_t* s, mongoc_iovec_t* iov, size_t n, int32_t timeout_ms) {
  const auto t = bounded(timeout_ms);
  if (!t) {
    errno = ETIMEDOUT;
    return -1;
  }
  return mongoc_stream_writev(inner_of(s), iov, n, *t);
}
ssize_t readv(mongoc_stream_t* s, mongoc_iovec_t* iov, size_t n, size_t min_bytes,
              int32_t timeout_ms) {
  const auto t = bounded(timeout_ms);
  if (!t) {
    errno = ETIMEDOUT;
    return -1;
  }
  return mongoc_stream_readv(inner_of(s), iov, n, min_bytes, *t);
}
int set_option(mongoc_stream_t* s, int level, int name, void* value, mongoc_socklen_t len) {
  return mongoc_stream_setsockopt(inner_of(s), level, name, value, len);
}
mongoc_stream_t* base(mongoc_stream_t* s) { return inner_of(s); }
bool check_closed(mongoc_stream_t* s) { return mongoc_stream_check_closed(inner_of(s)); }
bool timed_out(mongoc_stream_t* s) { return mongoc_stream_timed_out(inner_of(s)); }
bool should_retry(mongoc_stream_t* s) { return mongoc_stream_should_retry(inner_of(s)); }

mongoc_stream_t* wrap(mongoc_stream_t* inner) {
  auto* s = new DeadlineStream{};
  s->vtable.type = kDeadlineStreamType;
  s->vtable.destroy = destroy;
  s->vtable.failed = failed;
  s->vtable.close = close_stream;
  s->vtable.flush = flush;
  s->vtable.writev = writev;
  s->vtable.readv = readv;
  s->vtable.setsockopt = set_option;
  s->vtable.get_base_stream = base;
  s->vtable.check_closed = check_closed;
  s->vtable.timed_out = timed_out;
  s->vtable.should_retry = should_retry;
  s->inner = inner;
  return &s->vtable;
}

int64_t connect_budget_ms(const Config& config) {
  auto ms = static_cast<int64_t>(config.connect_timeout.count());
  if (t_deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          *t_deadline - std::chrono::steady_clock::now())
                          .count();
    ms = std::min<int64_t>(ms, std::max<int64_t>(left, 1));
  }
  return ms;
}

mongoc_stream_t* tcp_connect(const mongoc_host_list_t* host, int64_t budget_ms,
                             bson_error_t* error) {
  addrinfo hints{};
  hints.ai_family = host->family == AF_INET6 ? AF_INET6 : AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(host->port);
  if (getaddrinfo(host->host, port.c_str(), &hints, &found) != 0 || found == nullptr) {
    bson_set_error(error, MONGOC_ERROR_STREAM, MONGOC_ERROR_STREAM_NAME_RESOLUTION,
                   "cannot resolve host '%s'", host->host);
    return nullptr;
  }
  const int64_t expire_at = bson_get_monotonic_time() + budget_ms * 1000;
  mongoc_stream_t* stream = nullptr;
  for (addrinfo* a = found; a != nullptr && stream == nullptr; a = a->ai_next) {
    mongoc_socket_t* sock = mongoc_socket_new(a->ai_family, SOCK_STREAM, 0);
    if (sock == nullptr) continue;
    if (mongoc_socket_connect(sock, a->ai_addr, static_cast<mongoc_socklen_t>(a->ai_addrlen),
                              expire_at) != 0) {
      mongoc_socket_destroy(sock);
      continue;
    }
    int one = 1;
    (void)mongoc_socket_setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    stream = mongoc_stream_socket_new(sock);
  }
  freeaddrinfo(found);
  if (stream == nullptr)
    bson_set_error(error, MONGOC_ERROR_STREAM, MONGOC_ERROR_STREAM_CONNECT,
                   "failed to connect to %s within %lld ms", host->host_and_port,
                   static_cast<long long>(budget_ms));
  return stream;
}

mongoc_stream_t* start_tls(mongoc_stream_t* tcp, const mongoc_host_list_t* host,
                           const Config& config, int64_t budget_ms, bson_error_t* error) {
  mongoc_ssl_opt_t opt = *mongoc_ssl_opt_get_default();
  if (!config.tls_ca.empty()) opt.ca_file = config.tls_ca.c_str();
  if (!config.tls_cert.empty()) opt.pem_file = config.tls_cert.c_str();
  opt.weak_cert_validation = !config.tls_verify;
  opt.allow_invalid_hostname = !config.tls_verify;
  mongoc_stream_t* tls = mongoc_stream_tls_new_with_hostname(tcp, host->host, &opt, 1);
  if (tls == nullptr) {
    mongoc_stream_destroy(tcp);
    bson_set_error(error, MONGOC_ERROR_STREAM, MONGOC_ERROR_STREAM_SOCKET,
                   "cannot set up TLS to %s", host->host_and_port);
    return nullptr;
  }
  if (!mongoc_stream_tls_handshake_block(tls, host->host, static_cast<int32_t>(budget_ms), error)) {
    mongoc_stream_destroy(tls);
    return nullptr;
  }
  return tls;
}

}  // namespace

CallDeadline::CallDeadline(Deadline deadline) { t_deadline = deadline.at(); }
CallDeadline::~CallDeadline() { t_deadline.reset(); }

mongoc_stream_t* open_stream(const mongoc_uri_t* /*uri*/, const mongoc_host_list_t* host,
                             void* user_data, bson_error_t* error) {
  const auto& config = *static_cast<const Config*>(user_data);
  if (host->family == AF_UNIX) {
    bson_set_error(error, MONGOC_ERROR_STREAM, MONGOC_ERROR_STREAM_CONNECT,
                   "Unix domain sockets are not supported by this store");
    return nullptr;
  }
  const int64_t budget = connect_budget_ms(config);
  mongoc_stream_t* stream = tcp_connect(host, budget, error);
  if (stream != nullptr && config.tls)
    stream = start_tls(stream, host, config, connect_budget_ms(config), error);
  if (stream == nullptr) return nullptr;
  return wrap(mongoc_stream_buffered_new(stream, 1024));
}

}  // namespace leader::mongodb
