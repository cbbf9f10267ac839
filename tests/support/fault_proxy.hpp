#pragma once
// A userspace TCP proxy of the tests: forwards 127.0.0.1:<port()> to a server and, on request,
// swallows a client's requests (blackhole) or the server's replies, so a call's outcome becomes
// unknown without touching the server. Header-only (threads and poll), one thread per connection.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace leader::test {

/// A TCP proxy on a kernel-chosen loopback port in front of `host:port`.
class FaultProxy {
 public:
  /// What happens to the bytes of a connection that arrive while the mode is set.
  enum class Mode {
    forward,       ///< both directions pass
    blackhole,     ///< the client's bytes are dropped and the connection goes silent for good
    drop_replies,  ///< the client's bytes reach the server; its replies are dropped for good
  };

  /// Starts listening; throws std::runtime_error when no socket can be opened.
  FaultProxy(const std::string& host, int port) : target_host_(host), target_port_(port) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (listener_ < 0) throw std::runtime_error("FaultProxy: socket failed");
    const int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listener_, 64) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ::close(listener_);
      throw std::runtime_error("FaultProxy: bind/listen failed");
    }
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~FaultProxy() {
    stop_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    acceptor_.join();
    ::close(listener_);
    std::list<std::shared_ptr<Conn>> conns;
    {
      std::lock_guard lock(mu_);
      conns.swap(conns_);
    }
    for (auto& c : conns) {
      c->cut();
      if (c->thread.joinable()) c->thread.join();
    }
  }
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  /// The loopback port clients connect to.
  [[nodiscard]] int port() const { return port_; }
  /// "127.0.0.1:<port()>".
  [[nodiscard]] std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  /// Applies to bytes that arrive from now on; connections already silenced stay silent.
  void set_mode(Mode mode) { mode_ = mode; }
  /// Closes every connection silenced so far (its client then sees the connection drop).
  void cut_silenced() {
    std::lock_guard lock(mu_);
    for (auto& c : conns_)
      if (c->state.load() != Mode::forward) c->cut();
  }
  /// Client bytes dropped so far (blackhole).
  [[nodiscard]] std::uint64_t dropped_requests() const { return dropped_requests_; }
  /// Server bytes dropped so far (drop_replies, or on a blackholed connection).
  [[nodiscard]] std::uint64_t dropped_replies() const { return dropped_replies_; }

 private:
  struct Conn {
    int client = -1;
    int server = -1;
    std::atomic<Mode> state{Mode::forward};
    std::atomic<bool> closed{false};
    std::mutex fds;  ///< a shutdown never meets a closed (possibly reused) descriptor
    std::thread thread;
    void cut() {
      std::lock_guard lock(fds);
      if (closed.exchange(true) || client < 0) return;
      ::shutdown(client, SHUT_RDWR);
      ::shutdown(server, SHUT_RDWR);
    }
    void close_both() {
      std::lock_guard lock(fds);
      closed = true;
      ::close(client);
      ::close(server);
      client = server = -1;
    }
  };

  static bool send_all(int fd, const char* p, ssize_t n) {
    while (n > 0) {
      const ssize_t w = ::send(fd, p, static_cast<std::size_t>(n), MSG_NOSIGNAL);
      if (w <= 0) return false;
      p += w;
      n -= w;
    }
    return true;
  }

  void accept_loop() {
    while (!stop_) {
      const int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0) {
        if (stop_) return;
        continue;
      }
      const int server = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<std::uint16_t>(target_port_));
      ::inet_pton(AF_INET, target_host_.c_str(), &a.sin_addr);
      if (server < 0 || ::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        if (server >= 0) ::close(server);
        ::close(client);
        continue;
      }
      auto c = std::make_shared<Conn>();
      c->client = client;
      c->server = server;
      std::lock_guard lock(mu_);
      conns_.push_back(c);
      c->thread = std::thread([this, c] { pump(*c); });
    }
  }

  void pump(Conn& c) {
    char buf[65536];
    for (;;) {
      pollfd fds[2] = {{c.client, POLLIN, 0}, {c.server, POLLIN, 0}};
      if (::poll(fds, 2, 200) < 0) break;
      if (c.closed) break;
      bool done = false;
      if (fds[0].revents != 0) {
        const ssize_t n = ::recv(c.client, buf, sizeof buf, 0);
        if (n <= 0) break;
        Mode state = c.state.load();
        if (state == Mode::forward && mode_.load() != Mode::forward) c.state = state = mode_.load();
        if (state == Mode::blackhole) {
          dropped_requests_ += static_cast<std::uint64_t>(n);
        } else if (!send_all(c.server, buf, n)) {
          done = true;
        }
      }
      if (!done && fds[1].revents != 0) {
        const ssize_t n = ::recv(c.server, buf, sizeof buf, 0);
        if (n <= 0) break;
        if (c.state.load() != Mode::forward) {
          dropped_replies_ += static_cast<std::uint64_t>(n);
        } else if (!send_all(c.client, buf, n)) {
          done = true;
        }
      }
      if (done) break;
    }
    c.close_both();
  }

  std::string target_host_;
  int target_port_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<Mode> mode_{Mode::forward};
  std::atomic<std::uint64_t> dropped_requests_{0};
  std::atomic<std::uint64_t> dropped_replies_{0};
  std::mutex mu_;
  std::list<std::shared_ptr<Conn>> conns_;
  std::thread acceptor_;
};

}  // namespace leader::test
