#pragma once
// Helpers of the ZooKeeper integration tests: the server endpoint, a child process with a pipe,
// and SIGSTOP/SIGCONT of the server.

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace leader::zktest {

using Ms = std::chrono::milliseconds;

inline std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

/// host:port of the test server.
inline std::string hosts() { return env_or("LEADER_TEST_ZOOKEEPER_HOSTS", "127.0.0.1:12181"); }

/// A store URI on the test server with the given query string.
inline std::string uri(const std::string& query) { return "zk://" + hosts() + "/?" + query; }

/// The server JVM's PID.
inline pid_t server_pid() {
  std::ifstream in(env_or("LEADER_TEST_ZOOKEEPER_PIDFILE", "/tmp/le-test/pids/zookeeper.pid"));
  pid_t pid = 0;
  in >> pid;
  if (pid <= 0) throw std::runtime_error("no zookeeper PID file");
  return pid;
}

/// SIGSTOPs the server for its lifetime (also on assertion failure).
class ServerPause {
 public:
  ServerPause() : pid_(server_pid()) { kill(pid_, SIGSTOP); }
  ~ServerPause() { resume(); }
  ServerPause(const ServerPause&) = delete;
  ServerPause& operator=(const ServerPause&) = delete;
  void resume() {
    if (pid_ != 0) kill(pid_, SIGCONT);
    pid_ = 0;
  }

 private:
  pid_t pid_;
};

/// A child process with stdin and stdout on pipes; SIGKILLed when destroyed.
class Proc {
 public:
  explicit Proc(std::vector<std::string> argv) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) throw std::runtime_error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[1]);
      close(out[0]);
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    in_ = in[1];
    out_ = out[0];
  }
  ~Proc() {
    close_stdin();
    if (!reaped_) {
      kill(pid_, SIGKILL);
      wait();
    }
    close(out_);
  }
  Proc(const Proc&) = delete;
  Proc& operator=(const Proc&) = delete;

  /// One line of stdout, or "" on EOF.
  std::string read_line() {
    std::string line;
    char c;
    while (read(out_, &c, 1) == 1) {
      if (c == '\n') return line;
      line += c;
    }
    return line;
  }
  void close_stdin() {
    if (in_ >= 0) close(in_);
    in_ = -1;
  }
  void signal(int sig) { kill(pid_, sig); }
  int wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  bool reaped_ = false;
};

/// Polls `pred` every 20 ms until true or `timeout`.
template <class Pred>
bool eventually(Pred pred, Ms timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(Ms{20});
  }
  return pred();
}

}  // namespace leader::zktest
