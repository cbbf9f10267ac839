#include "connection.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "leader/errors.hpp"
#include "reply_reader.hpp"

namespace leader::redis {
namespace {

constexpr std::size_t kIoBuffer = std::size_t{16} * 1024;

BackendError error(ErrorCode code, const std::string& message) {
  return BackendError(code, "redis", message);
}

std::string openssl_error() {
  unsigned long e = ERR_get_error();
  if (e == 0) return "unknown TLS error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

bool is_ip_address(const std::string& host) {
  in6_addr a6{};
  in_addr a4{};
  return inet_pton(AF_INET, host.c_str(), &a4) == 1 || inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

}  // namespace

std::string error_text(const redisReply* r) {
  if (r == nullptr || r->type != REDIS_REPLY_ERROR) return {};
  return std::string(r->str, r->len);
}

EventFd::EventFd(const char* owner) : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (fd_ < 0)
    throw error(ErrorCode::internal,
                std::string("cannot create the ") + owner + "'s eventfd: " + std::strerror(errno));
}

EventFd::~EventFd() { ::close(fd_); }

void EventFd::ring() const noexcept {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof one);
}

void EventFd::drain() const noexcept {
  std::uint64_t v = 0;
  [[maybe_unused]] const ssize_t n = ::read(fd_, &v, sizeof v);
}

void EventFd::wait(Deadline until) const noexcept {
  for (;;) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(until.at() - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    pollfd p{fd_, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1 << 30)));
    if (n != 0 && !(n < 0 && errno == EINTR)) return;
  }
}

TlsContext tls_context(const ClientConfig& config) {
  if (config.transport != Transport::tls) return {nullptr, SSL_CTX_free};
  TlsContext ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  SSL_CTX* c = ctx.get();
  if (c == nullptr) throw error(ErrorCode::internal, "TLS: " + openssl_error());
  SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
  SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  auto fail = [&](const std::string& what) {
    return error(ErrorCode::failed_precondition,
                 "TLS setup for " + config.redacted_uri + ": " + what + ": " + openssl_error());
  };
  if (!config.tls_ca.empty()) {
    if (SSL_CTX_load_verify_locations(c, config.tls_ca.c_str(), nullptr) != 1)
      throw fail("cannot load CA file '" + config.tls_ca + "'");
  } else if (SSL_CTX_set_default_verify_paths(c) != 1) {
    throw fail("cannot load the system CA store");
  }
  if (!config.tls_cert.empty()) {
    if (SSL_CTX_use_certificate_chain_file(c, config.tls_cert.c_str()) != 1)
      throw fail("cannot load client certificate '" + config.tls_cert + "'");
    if (SSL_CTX_use_PrivateKey_file(c, config.tls_key.c_str(), SSL_FILETYPE_PEM) != 1)
      throw fail("cannot load client key '" + config.tls_key + "'");
  }
  SSL_CTX_set_verify(c, config.tls_verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
  return ctx;
}

Connection::Connection(const ClientConfig& config) : config_(config) {}

Connection::~Connection() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  if (fd_ >= 0) ::close(fd_);
  if (reader_ != nullptr) redisReaderFree(reader_);
}

std::unique_ptr<Connection> Connection::open(const ClientConfig& config, SSL_CTX* tls,
                                             Deadline deadline) {
  std::unique_ptr<Connection> c(new Connection(config));
  c->reader_ = create_reply_reader();
  if (c->reader_ == nullptr) throw error(ErrorCode::internal, "out of memory");
  try {
    c->connect_socket(deadline);
    if (tls != nullptr) c->handshake_tls(tls, deadline);
  } catch (const BackendError& e) {
    // Failing to connect is "unavailable" unless the caller's own deadline ran out.
    if (e.code() == ErrorCode::deadline_exceeded && !deadline.expired())
      throw error(ErrorCode::unavailable, e.what());
    throw;
  }
  c->authenticate(deadline);
  return c;
}

void Connection::connect_socket(Deadline deadline) {
  const std::string where = "cannot connect to redis at " + config_.endpoint();
  auto try_connect = [&](int family, const sockaddr* addr, socklen_t len) {
    fd_ = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) fail_io(where, errno);
    if (family != AF_UNIX) {
      int one = 1;
      ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (::connect(fd_, addr, len) == 0) return;
    if (errno != EINPROGRESS && errno != EAGAIN) fail_io(where, errno);
    wait_fd(POLLOUT, deadline);
    int err = 0;
    socklen_t err_len = sizeof err;
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &err_len);
    if (err != 0) fail_io(where, err);
  };
  if (config_.transport == Transport::unix_socket) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (config_.socket_path.size() >= sizeof addr.sun_path)
      throw error(ErrorCode::failed_precondition,
                  "unix socket path too long: " + config_.socket_path);
    std::memcpy(addr.sun_path, config_.socket_path.c_str(), config_.socket_path.size() + 1);
    try_connect(AF_UNIX, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    return;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc =
      ::getaddrinfo(config_.host.c_str(), std::to_string(config_.port).c_str(), &hints, &found);
  if (rc != 0) throw error(ErrorCode::unavailable, where + ": " + gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, freeaddrinfo);
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    try {
      try_connect(ai->ai_family, ai->ai_addr, ai->ai_addrlen);
      return;
    } catch (const BackendError&) {
      if (ai->ai_next == nullptr || deadline.expired()) throw;
      ::close(fd_);
      fd_ = -1;
    }
  }
}

void Connection::handshake_tls(SSL_CTX* tls, Deadline deadline) {
  ssl_ = SSL_new(tls);
  if (ssl_ == nullptr) throw error(ErrorCode::internal, "TLS: " + openssl_error());
  SSL_set_bio(ssl_, BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()));
  const std::string& name =
      config_.tls_server_name.empty() ? config_.host : config_.tls_server_name;
  if (config_.tls_verify) {
    if (is_ip_address(name))
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), name.c_str());
    else
      SSL_set1_host(ssl_, name.c_str());
  }
  if (!is_ip_address(name)) SSL_set_tlsext_host_name(ssl_, name.c_str());
  for (;;) {
    int r = SSL_connect(ssl_);
    flush_tls(deadline);
    if (r == 1) return;
    int e = SSL_get_error(ssl_, r);
    if (e == SSL_ERROR_WANT_READ) {
      pull_tls(deadline);
      continue;
    }
    long verify = SSL_get_verify_result(ssl_);
    std::string why = verify != X509_V_OK ? X509_verify_cert_error_string(verify) : openssl_error();
    throw error(verify != X509_V_OK ? ErrorCode::failed_precondition : ErrorCode::unavailable,
                "TLS handshake with " + config_.endpoint() + " failed: " + why);
  }
}

void Connection::authenticate(Deadline deadline) {
  std::vector<Command> setup;
  if (config_.password) {
    if (config_.user)
      setup.push_back({"AUTH", *config_.user, *config_.password});
    else
      setup.push_back({"AUTH", *config_.password});
  }
  if (config_.db != 0) setup.push_back({"SELECT", std::to_string(config_.db)});
  if (setup.empty()) return;
  std::vector<Reply> replies;
  pipeline(setup, replies, deadline);
  for (std::size_t i = 0; i < replies.size(); ++i) {
    std::string text = error_text(replies[i].get());
    if (text.empty()) continue;
    std::string what = setup[i][0] == "AUTH"
                           ? "authentication as '" + config_.user.value_or("default") + "'"
                           : "SELECT " + std::to_string(config_.db);
    // NOLINTBEGIN(performance-inefficient-string-concatenation): once, the throw ends the loop
    throw error(ErrorCode::failed_precondition,
                "redis at " + config_.endpoint() + " refused " + what + ": " + text);
    // NOLINTEND(performance-inefficient-string-concatenation)
  }
}

namespace {

// `commands` in the protocol's wire format, one after the other.
std::string wire_format(const std::vector<Command>& commands) {
  std::string out;
  for (const auto& cmd : commands) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    argv.reserve(cmd.size());
    lens.reserve(cmd.size());
    for (const auto& a : cmd) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    char* formatted = nullptr;
    int n =
        redisFormatCommandArgv(&formatted, static_cast<int>(argv.size()), argv.data(), lens.data());
    if (n < 0) throw error(ErrorCode::internal, "cannot format a redis command");
    out.append(formatted, static_cast<std::size_t>(n));
    redisFreeCommand(formatted);
  }
  return out;
}

}  // namespace

Reply Connection::parsed() {
  void* r = nullptr;
  if (redisReaderGetReply(reader_, &r) != REDIS_OK)
    throw error(ErrorCode::internal, "redis protocol error from " + config_.endpoint() + ": " +
                                         redisReaderGetError(reader_));
  return Reply(static_cast<redisReply*>(r));
}

void Connection::pipeline(const std::vector<Command>& commands, std::vector<Reply>& replies,
                          Deadline deadline) {
  replies.clear();
  const std::string out = wire_format(commands);
  write_all(out.data(), out.size(), deadline);
  replies.reserve(commands.size());
  while (replies.size() < commands.size()) {
    if (Reply r = parsed()) {
      replies.push_back(std::move(r));
      continue;
    }
    char buf[kIoBuffer];
    std::size_t got = read_some(buf, sizeof buf, deadline);
    redisReaderFeed(reader_, buf, got);
  }
}

Reply Connection::call(const Command& command, Deadline deadline) {
  std::vector<Reply> replies;
  pipeline({command}, replies, deadline);
  return std::move(replies.front());
}

void Connection::send(const Command& command, Deadline deadline) {
  const std::string out = wire_format({command});
  write_all(out.data(), out.size(), deadline);
}

Reply Connection::next_reply(Deadline deadline, int wake_fd) {
  for (;;) {
    if (Reply r = parsed()) return r;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(
        deadline.at() - std::chrono::steady_clock::now());
    pollfd p[2] = {{fd_, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    const int n = ::poll(p, wake_fd >= 0 ? 2 : 1,
                         static_cast<int>(std::clamp<long long>(left.count(), 0, 1 << 30)));
    if (n < 0 && errno != EINTR) fail_io("poll on redis connection", errno);
    if (wake_fd >= 0 && (p[1].revents & POLLIN) != 0) return nullptr;
    if (n > 0 && p[0].revents != 0) {
      feed_available();
    } else if (left.count() <= 0) {
      return nullptr;
    }
  }
}

// Moves what the socket holds now into the reply reader, without waiting (through OpenSSL on
// TLS, which may consume records such as session tickets and yield no data).
void Connection::feed_available() {
  char buf[kIoBuffer];
  const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
  if (n == 0)
    throw error(ErrorCode::unavailable,
                "redis at " + config_.endpoint() + " closed the connection");
  if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
    fail_io("cannot read from redis at " + config_.endpoint(), errno);
  if (ssl_ == nullptr) {
    if (n > 0) redisReaderFeed(reader_, buf, static_cast<std::size_t>(n));
    return;
  }
  if (n > 0) BIO_write(SSL_get_rbio(ssl_), buf, static_cast<int>(n));
  for (;;) {
    const int got = SSL_read(ssl_, buf, sizeof buf);
    if (got > 0) {
      redisReaderFeed(reader_, buf, static_cast<std::size_t>(got));
      continue;
    }
    const int e = SSL_get_error(ssl_, got);
    flush_tls(Deadline::after(config_.command_timeout));  // what OpenSSL has to answer
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return;
    fail_tls_read(e);
  }
}

bool Connection::closed_while_idle() {
  pollfd p{fd_, POLLIN, 0};
  int r = ::poll(&p, 1, 0);
  if (r == 0) return false;
  if (r < 0 || ssl_ == nullptr) return true;  // plain: readable while idle means EOF or junk
  // TLS 1.3 servers send session tickets after the handshake: consume them, and treat only
  // EOF, errors or application data as a dead connection.
  char buf[kIoBuffer];
  ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
  if (n == 0) return true;
  BIO_write(SSL_get_rbio(ssl_), buf, static_cast<int>(n));
  char probe = 0;
  int got = SSL_peek(ssl_, &probe, 1);
  if (got > 0) return true;
  return SSL_get_error(ssl_, got) != SSL_ERROR_WANT_READ;
}

void Connection::write_all(const char* data, std::size_t size, Deadline deadline) {
  if (ssl_ == nullptr) return send_raw(data, size, deadline);
  while (size > 0) {
    int n = SSL_write(ssl_, data, static_cast<int>(size));
    if (n <= 0) {
      int e = SSL_get_error(ssl_, n);
      if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
        throw error(ErrorCode::unavailable,
                    "TLS write to " + config_.endpoint() + " failed: " + openssl_error());
      flush_tls(deadline);
      if (e == SSL_ERROR_WANT_READ) pull_tls(deadline);
      continue;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  flush_tls(deadline);
}

std::size_t Connection::read_some(char* buf, std::size_t size, Deadline deadline) {
  if (ssl_ == nullptr) return recv_raw(buf, size, deadline);
  for (;;) {
    int n = SSL_read(ssl_, buf, static_cast<int>(size));
    if (n > 0) return static_cast<std::size_t>(n);
    int e = SSL_get_error(ssl_, n);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) fail_tls_read(e);
    flush_tls(deadline);
    pull_tls(deadline);
  }
}

void Connection::pull_tls(Deadline deadline) {
  char buf[kIoBuffer];
  const std::size_t got = recv_raw(buf, sizeof buf, deadline);
  BIO_write(SSL_get_rbio(ssl_), buf, static_cast<int>(got));
}

void Connection::flush_tls(Deadline deadline) {
  char buf[kIoBuffer];
  BIO* wbio = SSL_get_wbio(ssl_);
  while (BIO_ctrl_pending(wbio) > 0) {
    int n = BIO_read(wbio, buf, sizeof buf);
    if (n <= 0) break;
    send_raw(buf, static_cast<std::size_t>(n), deadline);
  }
}

void Connection::send_raw(const char* data, std::size_t size, Deadline deadline) {
  while (size > 0) {
    ssize_t n = ::send(fd_, data, size, MSG_NOSIGNAL);
    if (n > 0) {
      data += n;
      size -= static_cast<std::size_t>(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wait_fd(POLLOUT, deadline);
    } else if (errno != EINTR) {
      fail_io("cannot send to redis at " + config_.endpoint(), errno);
    }
  }
}

std::size_t Connection::recv_raw(char* buf, std::size_t size, Deadline deadline) {
  for (;;) {
    wait_fd(POLLIN, deadline);  // a reply is rarely there yet: poll first, then one recv
    ssize_t n = ::recv(fd_, buf, size, MSG_DONTWAIT);
    if (n > 0) return static_cast<std::size_t>(n);
    if (n == 0)
      throw error(ErrorCode::unavailable,
                  "redis at " + config_.endpoint() + " closed the connection");
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      fail_io("cannot read from redis at " + config_.endpoint(), errno);
  }
}

void Connection::wait_fd(short events, Deadline deadline) {
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline.at() -
                                                             std::chrono::steady_clock::now());
    if (left.count() <= 0)
      throw error(ErrorCode::deadline_exceeded,
                  "no answer from redis at " + config_.endpoint() + " before the deadline");
    pollfd p{fd_, events, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1 << 30)));
    if (r > 0) return;
    if (r < 0 && errno != EINTR) fail_io("poll on redis connection", errno);
  }
}

void Connection::fail_tls_read(int e) const {
  if (e == SSL_ERROR_ZERO_RETURN)
    throw error(ErrorCode::unavailable,
                "redis at " + config_.endpoint() + " closed the TLS session");
  throw error(ErrorCode::unavailable,
              "TLS read from " + config_.endpoint() + " failed: " + openssl_error());
}

void Connection::fail_io(const std::string& what, int err) const {
  throw error(ErrorCode::unavailable, what + ": " + std::strerror(err));
}

}  // namespace leader::redis
