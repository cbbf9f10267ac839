#include "etcd_test_util.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace leader::etcdtest {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string endpoint() { return env_or("LEADER_TEST_ETCD_ENDPOINT", "127.0.0.1:12379"); }

std::string uri(const std::string& prefix, const std::string& extra) {
  return "etcd://" + endpoint() + "?prefix=" + prefix + (extra.empty() ? "" : "&" + extra);
}

std::string unique(const std::string& what) {
  static int n = 0;
  return what + "-" + std::to_string(getpid()) + "-" + std::to_string(n++);
}

Deadline soon() { return Deadline::after(Ms{5000}); }

pid_t etcd_pid() {
  const std::string path = env_or("LEADER_TEST_ETCD_PIDFILE", "/tmp/le-test/pids/etcd.pid");
  std::ifstream in(path);
  pid_t pid = 0;
  in >> pid;
  if (pid <= 0) throw std::runtime_error("no etcd PID in " + path);
  return pid;
}

Proc::Proc(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    dup2(fds[1], STDOUT_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  out_ = fds[0];
}

Proc::~Proc() {
  if (!exited_) {
    ::kill(pid_, SIGKILL);
    wait();
  }
  if (out_ >= 0) close(out_);
}

std::optional<std::string> Proc::read_line(Ms timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<Ms>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{out_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[512];
    ssize_t n = ::read(out_, buf, sizeof buf);
    if (n <= 0) return std::nullopt;
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
}

void Proc::signal(int sig) { ::kill(pid_, sig); }

int Proc::wait() {
  if (!exited_) {
    int st = 0;
    waitpid(pid_, &st, 0);
    exited_ = true;
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  return status_;
}

int run(const std::vector<std::string>& argv) {
  Proc p(argv);
  return p.wait();
}

}  // namespace leader::etcdtest
