#pragma once
// Helpers of the Redis integration tests: the endpoints (env vars with the defaults of
// scripts/test-servers.sh and scripts/redis-tls.sh), a raw hiredis admin connection, and a
// private redis-server the fault cases may restart, stop and kill.

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "leader/leader.hpp"

namespace leader::test {

inline std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

/// The shared test server (scripts/test-servers.sh).
inline std::string redis_uri() {
  return env_or("LEADER_TEST_REDIS_URI", "redis://127.0.0.1:16379");
}

/// A lock name unique to this process and call.
inline std::string unique_lock(const std::string& what) {
  static int counter = 0;
  return "it-" + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000);
}

struct RedisFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Admin = std::unique_ptr<redisContext, RedisFree>;
using AdminReply = std::unique_ptr<redisReply, ReplyFree>;

/// A plain hiredis connection to host:port (test setup and foreign clients).
inline Admin admin(const std::string& host = "127.0.0.1", int port = 16379) {
  timeval tv{2, 0};
  Admin c(redisConnectWithTimeout(host.c_str(), port, tv));
  if (!c || c->err) return nullptr;
  redisSetTimeout(c.get(), tv);
  return c;
}

/// Runs a command on `c` (printf-style as redisCommand).
template <class... A>
AdminReply run(redisContext* c, const char* fmt, A... args) {
  return AdminReply(static_cast<redisReply*>(redisCommand(c, fmt, args...)));
}

inline Deadline soon() { return Deadline::after(std::chrono::seconds(5)); }

/// A redis-server owned by one test: started on `port`, restartable, stoppable, killable.
class PrivateRedis {
 public:
  /// `persistent`: append-only file with fsync on every write, in a fresh directory.
  explicit PrivateRedis(int port, bool persistent = false) : port_(port), persistent_(persistent) {
    if (persistent_) {
      std::string cmd = "rm -rf " + data_dir() + " && mkdir -p " + data_dir();
      if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "cannot create " << data_dir();
    }
    start();
  }
  ~PrivateRedis() {
    kill_now();
    if (persistent_) (void)!std::system(("rm -rf " + data_dir()).c_str());
  }
  void start() {
    pid_ = ::fork();
    if (pid_ == 0) {
      std::string port = std::to_string(port_);
      std::string sock = socket_path();
      std::string dir = persistent_ ? data_dir() : "/tmp";
      const char* aof = persistent_ ? "yes" : "no";
      ::execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1",
               "--unixsocket", sock.c_str(), "--unixsocketperm", "700", "--save", "",
               "--appendonly", aof, "--appendfsync", "always", "--dir", dir.c_str(),
               "--appendfilename", "leader-it.aof", "--logfile", "/dev/null", nullptr);
      ::_exit(127);
    }
    for (int i = 0; i < 200; ++i) {
      if (auto c = admin("127.0.0.1", port_)) {
        if (auto r = run(c.get(), "PING"); r && r->type == REDIS_REPLY_STATUS) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "private redis-server on port " << port_ << " did not start";
  }
  void kill_now() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  void restart() {
    kill_now();
    start();
  }
  void pause() { ::kill(pid_, SIGSTOP); }
  void resume() { ::kill(pid_, SIGCONT); }
  [[nodiscard]] int port() const { return port_; }
  /// Where a persistent server keeps its append-only file.
  [[nodiscard]] std::string data_dir() const {
    return "/tmp/leader-it-redis-" + std::to_string(port_) + ".d";
  }
  /// The unix socket the server also listens on.
  [[nodiscard]] std::string socket_path() const {
    return "/tmp/leader-it-redis-" + std::to_string(port_) + ".sock";
  }
  [[nodiscard]] std::string uri(const std::string& query = "") const {
    return "redis://127.0.0.1:" + std::to_string(port_) + query;
  }

 private:
  int port_;
  bool persistent_ = false;
  pid_t pid_ = -1;
};

inline int private_port() { return std::stoi(env_or("LEADER_TEST_REDIS_PRIVATE_PORT", "16391")); }

}  // namespace leader::test
