#include "process_group.hpp"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <system_error>

namespace leader::cli {
namespace {

// ---- Code that runs between fork and exec: async-signal-safe calls only, no allocation. ----

void send_report(int fd, int kind, int value) noexcept {
  KeeperReport report{kind, value};
  ssize_t n;
  do {
    n = ::write(fd, &report, sizeof report);
  } while (n < 0 && errno == EINTR);
}

// Highest descriptor number considered when close_range is unavailable.
constexpr int kMaxFd = 65536;

// Marks every descriptor >= 3 close-on-exec except the sorted `keep` ones.
void close_on_exec_except(const int* keep, std::size_t count) noexcept {
  unsigned int from = 3;
  for (std::size_t i = 0; i <= count; ++i) {
    unsigned int to = i < count ? static_cast<unsigned int>(keep[i]) : ~0U;
    if (to > from && ::close_range(from, to - 1, CLOSE_RANGE_CLOEXEC) != 0) {
      unsigned int last = std::min(to - 1, static_cast<unsigned int>(kMaxFd));
      for (unsigned int fd = from; fd <= last; ++fd)
        ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    }
    if (i < count) from = std::max(from, to + 1);
  }
}

[[noreturn]] void exec_command(const CommandSpec& spec, const char* path, char* const* argv,
                               char* const* envp, int report) noexcept {
  ::setpgid(0, 0);
  close_on_exec_except(spec.inherited_fds.data(), spec.inherited_fds.size());
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) ::sigaction(s, &dfl, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(path, argv, envp);
  int err = errno;
  send_report(report, KeeperReport::exec_failed, err);
  ::_exit(err == ENOENT ? 127 : 126);
}

// Reaps the command and adopted orphans until the command has exited and its group is empty;
// SIGKILLs the group as soon as leader (the parent) is gone, and still reaps it before exiting.
[[noreturn]] void watch_group(pid_t leader_pid, pid_t cmd, int report) noexcept {
  sigset_t set;
  ::sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) ::sigaddset(&set, s);
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  const timespec tick{0, 25'000'000};
  bool command_done = false;
  for (;;) {
    if (::getppid() != leader_pid) ::kill(-cmd, SIGKILL);  // leader died: nothing may outlive it
    for (;;) {
      int status = 0;
      pid_t p = ::waitpid(-1, &status, WNOHANG);
      if (p <= 0) break;
      if (p == cmd) {
        send_report(report, KeeperReport::command_exited, status);
        command_done = true;
      }
    }
    if (command_done && ::kill(-cmd, 0) != 0 && errno == ESRCH) ::_exit(0);
    ::sigtimedwait(&set, nullptr, &tick);
  }
}

[[noreturn]] void run_keeper(pid_t leader_pid, const CommandSpec& spec, char* const* argv,
                             char* const* envp, int report) noexcept {
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != leader_pid) ::_exit(1);  // leader died before the prctl took effect
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  pid_t cmd = ::fork();
  if (cmd < 0) {
    send_report(report, KeeperReport::fork_failed, errno);
    ::_exit(1);
  }
  if (cmd == 0) exec_command(spec, spec.path.c_str(), argv, envp, report);
  ::setpgid(cmd, cmd);  // the child does it too; whichever runs first creates the group
  send_report(report, KeeperReport::started, cmd);
  watch_group(leader_pid, cmd, report);
}

// ---- Parent side. ----

std::vector<char*> c_strings(const std::vector<std::string>& items) {
  std::vector<char*> out;
  out.reserve(items.size() + 1);
  for (const auto& s : items) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

bool read_report(int fd, KeeperReport& report) {
  ssize_t n;
  do {
    n = ::read(fd, &report, sizeof report);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof report);
}

bool is_executable_file(const std::string& path, int& error) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (error == 0 || errno == EACCES) error = errno;
    return false;
  }
  if (!S_ISREG(st.st_mode) || ::access(path.c_str(), X_OK) != 0) {
    error = EACCES;
    return false;
  }
  return true;
}

}  // namespace

SignalChannel::SignalChannel() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
  if (pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0)
    throw std::system_error(errno, std::generic_category(), "pthread_sigmask");
  ::signal(SIGPIPE, SIG_IGN);
  fd_ = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "signalfd");
}

SignalChannel::~SignalChannel() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<int> SignalChannel::drain() {
  std::vector<int> out;
  signalfd_siginfo info{};
  while (::read(fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info))
    out.push_back(static_cast<int>(info.ssi_signo));
  return out;
}

std::vector<int> open_descriptors() {
  std::vector<int> out;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return out;
  while (const dirent* entry = ::readdir(dir)) {
    int fd = std::atoi(entry->d_name);
    if (fd >= 3 && fd != ::dirfd(dir)) out.push_back(fd);
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::string> resolve_executable(const std::string& name, int& error) {
  error = 0;
  if (name.empty()) {
    error = ENOENT;
    return std::nullopt;
  }
  if (name.find('/') != std::string::npos) {
    if (is_executable_file(name, error)) return name;
    return std::nullopt;
  }
  const char* env_path = std::getenv("PATH");
  std::string path = env_path != nullptr ? env_path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (is_executable_file(candidate, error)) return candidate;
    start = end + 1;
  }
  if (error == 0) error = ENOENT;
  return std::nullopt;
}

CommandGroup CommandGroup::start(const CommandSpec& spec) {
  std::vector<char*> argv = c_strings(spec.argv);
  std::vector<char*> envp = c_strings(spec.env);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe2");
  pid_t leader_pid = ::getpid();
  pid_t keeper = ::fork();
  if (keeper < 0) {
    int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::system_error(err, std::generic_category(), "fork");
  }
  if (keeper == 0) {
    ::close(fds[0]);
    run_keeper(leader_pid, spec, argv.data(), envp.data(), fds[1]);
  }
  ::close(fds[1]);
  KeeperReport first{};
  if (!read_report(fds[0], first) || first.kind != KeeperReport::started) {
    int err = first.kind == KeeperReport::fork_failed ? first.value : ECHILD;
    ::close(fds[0]);
    ::waitpid(keeper, nullptr, 0);
    throw std::system_error(err, std::generic_category(), "starting the command");
  }
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  return CommandGroup(keeper, first.value, fds[0]);
}

CommandGroup::CommandGroup(CommandGroup&& other) noexcept
    : keeper_(other.keeper_),
      pgid_(other.pgid_),
      report_fd_(other.report_fd_),
      keeper_exited_(other.keeper_exited_),
      command_status_(other.command_status_),
      exec_error_(other.exec_error_) {
  other.report_fd_ = -1;
  other.keeper_exited_ = true;
}

CommandGroup::~CommandGroup() {
  if (report_fd_ >= 0) ::close(report_fd_);
}

bool CommandGroup::signal(int sig) const noexcept { return ::kill(-pgid_, sig) == 0; }

bool CommandGroup::group_alive() const noexcept { return ::kill(-pgid_, 0) == 0 || errno == EPERM; }

void CommandGroup::handle(const KeeperReport& report) {
  if (report.kind == KeeperReport::command_exited) command_status_ = report.value;
  if (report.kind == KeeperReport::exec_failed) exec_error_ = report.value;
}

void CommandGroup::poll() {
  KeeperReport report{};
  while (report_fd_ >= 0 && read_report(report_fd_, report)) handle(report);
  if (keeper_exited_) return;
  int status = 0;
  if (::waitpid(keeper_, &status, WNOHANG) == keeper_) {
    keeper_exited_ = true;
    while (read_report(report_fd_, report)) handle(report);
    ::close(report_fd_);
    report_fd_ = -1;  // the pipe is at EOF now; stop polling it
  }
}

bool CommandGroup::finished() const noexcept { return keeper_exited_ && !group_alive(); }

}  // namespace leader::cli
