#include "child_process.hpp"

#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

extern char** environ;

namespace leader::test {
namespace {

using Ms = std::chrono::milliseconds;

std::vector<char*> c_strings(std::vector<std::string>& items) {
  std::vector<char*> out;
  for (auto& s : items) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

/// The inherited environment minus dropped prefixes and names set or removed by `env`, plus the
/// variables `env` sets.
std::vector<std::string> environment(const ChildOptions& o) {
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=') + 1); };
  auto replaced = [&](const std::string& entry) {
    for (const auto& p : o.drop_env_prefixes)
      if (entry.rfind(p, 0) == 0) return true;
    for (const auto& e : o.env)
      if (entry.rfind(name_of(e), 0) == 0) return true;
    return false;
  };
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e)
    if (!replaced(*e)) out.emplace_back(*e);
  for (const auto& e : o.env)
    if (!e.empty() && e.back() != '=') out.push_back(e);
  if (!o.faketime.empty()) {
    const std::string lib = faketime_library();
    if (lib.empty()) throw std::runtime_error("libfaketime is not installed (faketime option)");
    out.insert(out.end(), {"LD_PRELOAD=" + lib, "FAKETIME=" + o.faketime, "DONT_FAKE_MONOTONIC=1",
                           "FAKETIME_NO_CACHE=1"});
  }
  return out;
}

int decode(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st); }

/// Closes both ends of `fds` that are open.
void close_pair(int fds[2]) {
  for (int i = 0; i < 2; ++i)
    if (fds[i] >= 0) ::close(fds[i]);
}

/// Adds the file action for stream `fd` going to `where`.
void redirect(posix_spawn_file_actions_t& fa, int fd, Output where, const std::string& file,
              int pipe_write) {
  switch (where) {
    case Output::pipe:
      posix_spawn_file_actions_adddup2(&fa, pipe_write, fd);
      break;
    case Output::null:
      posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", O_WRONLY, 0);
      break;
    case Output::file:
      if (file.empty()) throw std::runtime_error("Output::file without a file name");
      posix_spawn_file_actions_addopen(&fa, fd, file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      break;
    case Output::inherit:
      break;
  }
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::vector<std::string>& env)
    : ChildProcess(argv, ChildOptions{.env = env}) {}

ChildProcess::ChildProcess(const std::vector<std::string>& argv_in, const ChildOptions& o)
    : group_(o.new_process_group), out_file_(o.out_file), err_file_(o.err_file) {
  if (argv_in.empty()) throw std::runtime_error("ChildProcess: empty argv");
  int out[2] = {-1, -1};
  int in[2] = {-1, -1};
  const bool out_pipe = o.out == Output::pipe || o.err == Output::pipe;
  if (out_pipe && pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  if (o.stdin_pipe && pipe2(in, O_CLOEXEC) != 0) {
    close_pair(out);
    throw std::runtime_error("pipe failed");
  }
  std::vector<std::string> args = argv_in;
  std::vector<std::string> vars = environment(o);
  auto argv = c_strings(args);
  auto envp = c_strings(vars);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (o.stdin_pipe) {
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  } else {
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  }
  redirect(fa, 1, o.out, o.out_file, out[1]);
  redirect(fa, 2, o.err, o.err_file, out[1]);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (o.new_process_group) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
  }
  const int rc = posix_spawnp(&pid_, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (out[1] >= 0) ::close(out[1]);
  if (in[0] >= 0) ::close(in[0]);
  out_ = out[0];
  in_ = in[1];
  if (rc != 0) {
    pid_ = -1;
    close_fds();
    throw std::runtime_error("cannot start " + argv_in[0] + ": " + std::strerror(rc));
  }
}

ChildProcess ChildProcess::fork(const std::function<int()>& body) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    close_pair(out);
    throw std::runtime_error("fork failed");
  }
  if (pid == 0) {
    ::dup2(out[1], 1);
    int code = 99;
    try {
      code = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child %d: %s\n", static_cast<int>(getpid()), e.what());
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  ::close(out[1]);
  ChildProcess child;
  child.pid_ = pid;
  child.out_ = out[0];
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept { *this = std::move(other); }

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0 && !reaped_) kill();
    close_fds();
    pid_ = std::exchange(other.pid_, -1);
    out_ = std::exchange(other.out_, -1);
    in_ = std::exchange(other.in_, -1);
    group_ = other.group_;
    reaped_ = other.reaped_;
    status_ = other.status_;
    buffer_ = std::move(other.buffer_);
    out_file_ = std::move(other.out_file_);
    err_file_ = std::move(other.err_file_);
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !reaped_) kill();
  close_fds();
}

void ChildProcess::close_fds() {
  if (out_ >= 0) ::close(out_);
  if (in_ >= 0) ::close(in_);
  out_ = in_ = -1;
}

std::optional<std::string> ChildProcess::next_line(Ms timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    const auto left =
        std::chrono::duration_cast<Ms>(end - std::chrono::steady_clock::now()).count();
    if (left <= 0 || out_ < 0) return std::nullopt;
    pollfd p{out_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[512];
    const ssize_t n = ::read(out_, buf, sizeof buf);
    if (n <= 0) return std::nullopt;
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
}

std::string ChildProcess::read_line(Ms timeout) { return next_line(timeout).value_or(""); }

std::string ChildProcess::read_all(Ms timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (out_ >= 0) {
    const auto left =
        std::chrono::duration_cast<Ms>(end - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd p{out_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(out_, buf, sizeof buf);
    if (n <= 0) break;
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
  return std::exchange(buffer_, {});
}

void ChildProcess::write_stdin(std::string_view text) {
  if (in_ < 0) throw std::runtime_error("ChildProcess: stdin is not a pipe (or closed)");
  while (!text.empty()) {
    const ssize_t n = ::write(in_, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("ChildProcess: write to stdin failed");
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

void ChildProcess::close_stdin() {
  if (in_ >= 0) ::close(in_);
  in_ = -1;
}

void ChildProcess::signal(int sig) const {
  if (pid_ > 0 && !reaped_) ::kill(group_ ? -pid_ : pid_, sig);
}

void ChildProcess::pause() const { signal(SIGSTOP); }
void ChildProcess::resume() const { signal(SIGCONT); }

int ChildProcess::wait() {
  if (!reaped_ && pid_ > 0) {
    int st = 0;
    while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    status_ = decode(st);
  }
  return status_;
}

bool ChildProcess::exited() {
  if (reaped_ || pid_ <= 0) return true;
  int st = 0;
  if (waitpid(pid_, &st, WNOHANG) != pid_) return false;
  reaped_ = true;
  status_ = decode(st);
  return true;
}

std::optional<int> ChildProcess::wait_for(Ms limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!exited()) {
    if (std::chrono::steady_clock::now() >= end) return std::nullopt;
    std::this_thread::sleep_for(Ms{10});
  }
  return status_;
}

int ChildProcess::kill() {
  if (pid_ <= 0) return status_;
  if (!reaped_) {
    signal(SIGCONT);
    signal(SIGKILL);
  }
  return wait();
}

std::string ChildProcess::out() const { return out_file_.empty() ? "" : read_file(out_file_); }
std::string ChildProcess::err() const { return err_file_.empty() ? "" : read_file(err_file_); }

int run(const std::vector<std::string>& argv, ChildOptions options) {
  return ChildProcess(argv, options).wait();
}

bool process_running(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto close_paren = stat.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= stat.size()) return false;
  const char state = stat[close_paren + 2];
  return state != 'Z' && state != 'X';
}

std::string faketime_library() {
  glob_t g{};
  std::string found;
  if (glob("/usr/lib/*/faketime/libfaketimeMT.so.1", 0, nullptr, &g) == 0 && g.gl_pathc > 0)
    found = g.gl_pathv[0];
  globfree(&g);
  return found;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace leader::test
