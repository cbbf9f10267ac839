// The keeper: the command's parent. Runs between fork and exit of a multi-threaded leader, so it
// uses only async-signal-safe calls: no allocation, no locks, no stdio.

#include "keeper.hpp"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "process_tree.hpp"

namespace leader::cli {
namespace {

// How often the keeper looks at its parent, its children and the clock when nothing happens.
constexpr std::int64_t kTickNs = 25'000'000;

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

void set_disposition(std::initializer_list<int> signals, void (*handler)(int)) noexcept {
  struct sigaction action {};
  action.sa_handler = handler;
  for (int s : signals) ::sigaction(s, &action, nullptr);
}

[[noreturn]] void exec_command(const KeeperSetup& k) noexcept {
  ::setpgid(0, 0);
  close_on_exec_except(k.spec->inherited_fds.data(), k.spec->inherited_fds.size());
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  set_disposition({SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU}, SIG_DFL);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(k.spec->path.c_str(), k.argv, k.envp);
  int err = errno;
  send_report(k.report_fd, KeeperReport::exec_failed, err);
  ::_exit(err == ENOENT ? 127 : 126);
}

std::int64_t monotonic_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);  // what std::chrono::steady_clock reads
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Reads every deadline leader fed since the last call; keeps the latest in `deadline`.
void read_deadlines(int fd, std::int64_t& deadline) noexcept {
  std::int64_t fed[64];
  for (;;) {
    ssize_t n = ::read(fd, fed, sizeof fed);
    if (n < static_cast<ssize_t>(sizeof fed[0])) return;  // empty (EAGAIN), or leader is gone
    deadline = fed[static_cast<std::size_t>(n) / sizeof fed[0] - 1];
  }
}

// The command's process group and every descendant of the keeper (setsid escapees included).
void signal_tree(pid_t cmd, int sig) noexcept {
  ::kill(-cmd, sig);
  signal_descendants(::getpid(), -1, sig);
}

// Reaps every exited child (the command and adopted orphans); false once no child is left.
bool reap_children(pid_t cmd, int report, bool& command_done) noexcept {
  for (;;) {
    int status = 0;
    pid_t p = ::waitpid(-1, &status, WNOHANG);
    if (p == 0) return true;
    if (p < 0) return errno != ECHILD;
    if (p == cmd) {
      send_report(report, KeeperReport::command_exited, status);
      command_done = true;
    }
  }
}

// The keeper's loop: enforce the deadline, follow leader, reap; exit when everything is gone.
[[noreturn]] void watch_tree(const KeeperSetup& k, pid_t cmd) noexcept {
  sigset_t set;
  ::sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) ::sigaddset(&set, s);
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  const std::int64_t grace_ns = std::chrono::nanoseconds(k.spec->grace).count();
  std::int64_t deadline = std::chrono::nanoseconds(k.spec->deadline.time_since_epoch()).count();
  std::int64_t kill_at = INT64_MAX;
  bool expired = false, command_done = false;
  for (;;) {
    if (::getppid() != k.leader_pid) signal_tree(cmd, SIGKILL);  // nothing may outlive leader
    read_deadlines(k.deadline_fd, deadline);
    std::int64_t now = monotonic_ns();
    if (!expired && now >= deadline) {  // no confirmed renewal in time, even if leader is stopped
      expired = true;
      send_report(k.report_fd, KeeperReport::deadline_passed, 0);
      signal_tree(cmd, SIGTERM);
      kill_at = deadline + grace_ns;
    }
    if (now >= kill_at) signal_tree(cmd, SIGKILL);
    bool children = reap_children(cmd, k.report_fd, command_done);
    if (command_done && !children && ::kill(-cmd, 0) != 0 && errno == ESRCH) ::_exit(0);
    std::int64_t next = std::min(expired ? kill_at : deadline, now + kTickNs);
    std::int64_t wait = std::clamp<std::int64_t>(next - now, 1'000'000, kTickNs);
    const timespec tick{0, static_cast<long>(wait)};
    ::sigtimedwait(&set, nullptr, &tick);
  }
}

}  // namespace

void run_keeper(const KeeperSetup& k) noexcept {
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != k.leader_pid) ::_exit(1);  // leader died before the prctl took effect
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  ::setpgid(0, 0);  // a group of its own: kill -STOP -<leader's group> and Ctrl-Z miss it
  set_disposition({SIGTSTP, SIGTTIN, SIGTTOU}, SIG_IGN);
  ::fcntl(k.deadline_fd, F_SETFL, ::fcntl(k.deadline_fd, F_GETFL) | O_NONBLOCK);
  pid_t cmd = ::fork();
  if (cmd < 0) {
    send_report(k.report_fd, KeeperReport::fork_failed, errno);
    ::_exit(1);
  }
  if (cmd == 0) exec_command(k);
  ::setpgid(cmd, cmd);  // the child does it too; whichever runs first creates the group
  send_report(k.report_fd, KeeperReport::started, cmd);
  watch_tree(k, cmd);
}

}  // namespace leader::cli
