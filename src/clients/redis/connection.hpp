#pragma once
// One connection to a Redis server over our own socket layer: plain TCP, a unix socket, or TLS
// through OpenSSL memory BIOs. Commands are formatted and replies parsed by hiredis (its
// redisFormatCommandArgv and redisReader), so every byte moves through poll() with the caller's
// deadline, the same way for all three transports. Not thread-safe: the pool hands a connection
// to one caller at a time.

#include <hiredis/hiredis.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config.hpp"
#include "leader/time.hpp"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace leader::redis {

/// Frees a hiredis reply.
struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
/// An owned reply.
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;
/// One command: its arguments, binary-safe.
using Command = std::vector<std::string>;

/// An owned OpenSSL context: the TLS settings of one client.
using TlsContext = std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)>;
/// The TLS settings of `config` (CA, client certificate, verification mode), built once per
/// client; null without TLS. Throws BackendError.
[[nodiscard]] TlsContext tls_context(const ClientConfig& config);

/// A connected, authenticated session. Failures throw BackendError (unavailable on I/O
/// errors, deadline_exceeded on timeouts, failed_precondition on auth/TLS verification).
class Connection {
 public:
  /// Connects, handshakes, authenticates and selects the database before `deadline`.
  static std::unique_ptr<Connection> open(const ClientConfig& config, SSL_CTX* tls,
                                          Deadline deadline);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Sends all `commands` in one write and reads one reply each (error replies included):
  /// `replies` is cleared, then receives the replies in order as they arrive. When the connection
  /// fails or `deadline` passes (BackendError), `replies` holds those read before: the commands
  /// after them have no answer (a pipeline reports each command's outcome on its own).
  void pipeline(const std::vector<Command>& commands, std::vector<Reply>& replies,
                Deadline deadline);
  /// Sends one command and reads its reply.
  Reply call(const Command& command, Deadline deadline);
  /// Sends one command without reading a reply (a subscriber's SUBSCRIBE).
  void send(const Command& command, Deadline deadline);
  /// The next reply or pushed message (a subscriber's), or null once `deadline` passes or
  /// `wake_fd` (-1: none) becomes readable. Throws BackendError(unavailable) when the server
  /// closes the connection.
  [[nodiscard]] Reply next_reply(Deadline deadline, int wake_fd);
  /// True when the server closed the connection or sent unexpected data while it was idle.
  [[nodiscard]] bool closed_while_idle();
  /// True when this connection served a caller before (it may have gone stale since).
  [[nodiscard]] bool reused() const { return reused_; }
  /// Marks the connection as having served a caller.
  void mark_reused() { reused_ = true; }
  /// "host:port" (or the socket path) this connection talks to.
  [[nodiscard]] std::string endpoint() const { return config_.endpoint(); }
  /// The pool's primary generation this connection was opened for (Sentinel mode).
  [[nodiscard]] std::uint64_t generation() const { return generation_; }
  /// Sets generation().
  void set_generation(std::uint64_t g) { generation_ = g; }

 private:
  explicit Connection(const ClientConfig& config);
  void connect_socket(Deadline deadline);
  void handshake_tls(SSL_CTX* tls, Deadline deadline);
  void authenticate(Deadline deadline);
  void write_all(const char* data, std::size_t size, Deadline deadline);
  std::size_t read_some(char* buf, std::size_t size, Deadline deadline);
  void send_raw(const char* data, std::size_t size, Deadline deadline);
  std::size_t recv_raw(char* buf, std::size_t size, Deadline deadline);
  void flush_tls(Deadline deadline);
  /// Waits for the socket's next bytes and hands them to OpenSSL.
  void pull_tls(Deadline deadline);
  void feed_available();
  /// The next reply the reader holds complete, or null.
  Reply parsed();
  void wait_fd(short events, Deadline deadline);
  [[noreturn]] void fail_io(const std::string& what, int err) const;
  /// Throws the error of an SSL_read that failed with `e` (not WANT_READ or WANT_WRITE).
  [[noreturn]] void fail_tls_read(int e) const;

  const ClientConfig config_;  // a copy: in Sentinel mode each connection has its primary's address
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  redisReader* reader_ = nullptr;
  bool reused_ = false;
  std::uint64_t generation_ = 0;
};

/// An eventfd: a wake-up that poll() waits for beside a connection's socket (the AsyncLane's
/// requests, a watch's stop request).
class EventFd {
 public:
  /// Throws BackendError(internal), naming `owner`, when none can be created.
  explicit EventFd(const char* owner);
  ~EventFd();
  EventFd(const EventFd&) = delete;
  EventFd& operator=(const EventFd&) = delete;
  /// The descriptor, readable once rung.
  [[nodiscard]] int fd() const { return fd_; }
  /// Makes fd() readable (thread-safe, noexcept: a stop callback's).
  void ring() const noexcept;
  /// Makes fd() unreadable again.
  void drain() const noexcept;
  /// Waits until fd() is readable or `until` passes.
  void wait(Deadline until) const noexcept;

 private:
  int fd_;
};

/// The message of an error reply, or empty when `r` is not an error.
std::string error_text(const redisReply* r);

}  // namespace leader::redis
