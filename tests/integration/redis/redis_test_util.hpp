#pragma once
// Helpers of the Redis integration tests: the endpoints (env vars with the defaults of
// scripts/test-servers.sh and scripts/redis-tls.sh), a raw hiredis admin connection, and a
// private redis-server the fault cases may restart, stop and kill (a tests/support ChildProcess).

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "leader/leader.hpp"
#include "server_process.hpp"
#include "timing.hpp"

namespace leader::test {

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

/// How a PrivateRedis persists its data.
enum class Persistence {
  none,          ///< nothing: a restart starts empty
  aof_always,    ///< append-only file, fsync on every write
  aof_everysec,  ///< append-only file, fsync once a second (Redis' recommended setting)
  rdb,           ///< snapshots only when the test sends SAVE (a restart reloads the last one)
};

/// A redis-server owned by one test: started on `port`, restartable, stoppable, killable.
class PrivateRedis {
 public:
  /// `persistent`: append-only file with fsync on every write, in a fresh directory.
  explicit PrivateRedis(int port, bool persistent = false)
      : PrivateRedis(port, persistent ? Persistence::aof_always : Persistence::none) {}
  /// A server persisting as `mode`, data in a fresh directory of its own.
  PrivateRedis(int port, Persistence mode)
      : port_(port),
        mode_(mode),
        dir_("/tmp/leader-it-redis-" + std::to_string(::getpid()) + "-" + std::to_string(port) +
             ".d") {
    std::error_code ec;
    std::filesystem::remove_all(data_dir(), ec);
    if (!std::filesystem::create_directories(data_dir(), ec))
      ADD_FAILURE() << "cannot create " << data_dir() << ": " << ec.message();
    start();
  }
  ~PrivateRedis() {
    kill_now();
    std::error_code ec;
    std::filesystem::remove_all(data_dir(), ec);
  }
  PrivateRedis(const PrivateRedis&) = delete;
  PrivateRedis& operator=(const PrivateRedis&) = delete;
  /// Starts redis-server (as a replica of `primary_port` when given) and waits for PING.
  void start(int primary_port = 0) {
    const bool aof = mode_ == Persistence::aof_always || mode_ == Persistence::aof_everysec;
    std::vector<std::string> args = {"redis-server",
                                     "--port",
                                     std::to_string(port_),
                                     "--bind",
                                     "127.0.0.1",
                                     "--unixsocket",
                                     socket_path(),
                                     "--unixsocketperm",
                                     "700",
                                     "--save",
                                     "",
                                     "--appendonly",
                                     aof ? "yes" : "no",
                                     "--appendfsync",
                                     mode_ == Persistence::aof_everysec ? "everysec" : "always",
                                     "--dir",
                                     data_dir(),
                                     "--appendfilename",
                                     "leader-it.aof",
                                     "--dbfilename",
                                     "dump.rdb",
                                     "--logfile",
                                     "/dev/null"};
    if (primary_port > 0)
      args.insert(args.end(), {"--replicaof", "127.0.0.1", std::to_string(primary_port)});
    process_.emplace(args, ChildOptions{.out = Output::null});
    for (int i = 0; i < 200; ++i) {
      if (auto c = admin("127.0.0.1", port_)) {
        if (auto r = run(c.get(), "PING"); r && r->type == REDIS_REPLY_STATUS) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "private redis-server on port " << port_ << " did not start";
  }
  /// SIGKILL (a crash) and reap.
  void kill_now() { process_.reset(); }
  void restart() {
    kill_now();
    start();
  }
  void pause() { process_->pause(); }
  void resume() { process_->resume(); }
  [[nodiscard]] int port() const { return port_; }
  /// Where the server keeps its append-only file and snapshots (removed at destruction).
  [[nodiscard]] const std::string& data_dir() const { return dir_; }
  /// The unix socket the server also listens on.
  [[nodiscard]] std::string socket_path() const {
    return "/tmp/leader-it-redis-" + std::to_string(port_) + ".sock";
  }
  [[nodiscard]] std::string uri(const std::string& query = "") const {
    return "redis://127.0.0.1:" + std::to_string(port_) + query;
  }

 private:
  int port_;
  Persistence mode_ = Persistence::none;
  std::string dir_;
  std::optional<ChildProcess> process_;
};

/// The port of the private servers of the fault cases (LEADER_TEST_REDIS_PRIVATE_PORT, default:
/// one the kernel chooses).
inline int private_port() {
  return std::stoi(env_or("LEADER_TEST_REDIS_PRIVATE_PORT", std::to_string(free_port())));
}

}  // namespace leader::test
