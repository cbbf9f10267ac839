// Requests of `leader serve` that wait (serve_waits.hpp).

#include "serve_waits.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <utility>

#include "serve_leases.hpp"

namespace leader::cli {
namespace {

// The numeric host and port of a socket address.
std::pair<std::string, int> host_and_port(const sockaddr_storage& addr, socklen_t len) {
  char host[NI_MAXHOST] = {};
  char port[NI_MAXSERV] = {};
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof host, port,
                  sizeof port, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return {"", -1};
  return {host, std::atoi(port)};
}

// The socket of the connection that carries `req`, or -1: cpp-httplib 0.11 does not hand it to
// handlers, so it is found among this process's descriptors by its two addresses (unique while the
// handler runs, since the worker keeps the connection open until the handler returns).
int connection_socket(const httplib::Request& req) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = std::atoi(entry.path().filename().c_str());
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof local, peer_len = sizeof peer;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
        getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0)
      continue;
    if (host_and_port(local, local_len).second == req.local_port &&
        host_and_port(peer, peer_len) == std::pair{req.remote_addr, req.remote_port})
      return fd;
  }
  return -1;
}

// Whether the client closed its side of the connection (EOF or an error pending). Bytes of a
// pipelined next request do not count.
bool connection_gone(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if ((p.revents & (POLLERR | POLLHUP | POLLNVAL | POLLRDHUP)) != 0) return true;
  char c = 0;
  ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

}  // namespace

WaitWatch::WaitWatch(const httplib::Request& req, const std::stop_token& stopping)
    : fd_(connection_socket(req)), relay_(stopping, [this] { source_.request_stop(); }) {
  if (fd_ >= 0) poller_ = std::jthread([this](const std::stop_token& done) { poll(done); });
}

bool WaitWatch::client_gone() {
  if (!gone_ && fd_ >= 0 && connection_gone(fd_)) gone_ = true;
  return gone_;
}

void WaitWatch::poll(const std::stop_token& done) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  while (!done.stop_requested()) {
    if (connection_gone(fd_)) {
      gone_ = true;
      source_.request_stop();
      return;
    }
    cv.wait_for(lock, done, std::chrono::milliseconds(100), [] { return false; });
  }
}

WaitSlot::WaitSlot(std::atomic<int>& count, int limit) : count_(count) {
  if (count_.fetch_add(1) >= limit) {
    count_.fetch_sub(1);
    throw ApiError(429, "too_many_waits",
                   "at most " + std::to_string(limit) +
                       " waiting requests (acquires with 'wait', long-polls) at once "
                       "(--threads - 2); retry later");
  }
}

}  // namespace leader::cli
