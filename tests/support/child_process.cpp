#include "child_process.hpp"

#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace leader::test {

ChildProcess::ChildProcess(const std::vector<std::string>& argv_in,
                           const std::vector<std::string>& env) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  std::vector<std::string> args = argv_in;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> vars = env;
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  int rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(pipefd[1]);
  out_ = pipefd[0];
  if (rc != 0) throw std::runtime_error(std::string("posix_spawn failed: ") + std::strerror(rc));
}

ChildProcess::~ChildProcess() {
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    wait();
  }
  if (out_ >= 0) close(out_);
}

std::string ChildProcess::read_line(std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    end - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return {};
    pollfd p{out_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[512];
    ssize_t n = read(out_, buf, sizeof buf);
    if (n <= 0) return {};
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
}

void ChildProcess::signal(int sig) { kill(pid_, sig); }

int ChildProcess::wait() {
  if (!reaped_) {
    int st = 0;
    while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  return status_;
}

std::string faketime_library() {
  glob_t g{};
  std::string found;
  if (glob("/usr/lib/*/faketime/libfaketimeMT.so.1", 0, nullptr, &g) == 0 && g.gl_pathc > 0)
    found = g.gl_pathv[0];
  globfree(&g);
  return found;
}

}  // namespace leader::test
