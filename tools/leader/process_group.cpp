#include "process_group.hpp"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

#include "keeper.hpp"
#include "process_tree.hpp"

extern char** environ;

namespace leader::cli {
namespace {

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
  // Job control must not suspend leader: a stopped leader cannot renew (the keeper would then
  // kill the command at the deadline). COMMAND gets the default dispositions back.
  for (int s : {SIGTSTP, SIGTTIN, SIGTTOU}) ::signal(s, SIG_IGN);
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

SignalStop::SignalStop(SignalChannel& signals, std::stop_source& stop)
    : done_(::eventfd(0, EFD_CLOEXEC)), thread_([this, &signals, &stop] {
        pollfd fds[2] = {{signals.fd(), POLLIN, 0}, {done_, POLLIN, 0}};
        while (true) {
          if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
          if ((fds[1].revents & POLLIN) != 0) return;
          for (int sig : signals.drain()) {
            if (sig == SIGCHLD) continue;
            received_ = sig;
            stop.request_stop();
            return;
          }
        }
      }) {}

int SignalStop::finish() {
  if (thread_.joinable()) {
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(done_, &one, sizeof one);
    thread_.join();
    ::close(done_);
  }
  return received_.load();
}

std::vector<std::string> environment_with(
    const std::vector<std::pair<std::string, std::string>>& vars) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    bool overridden = entry.rfind("LEADER_SLOT=", 0) == 0;
    for (const auto& [name, value] : vars) overridden |= entry.rfind(name + "=", 0) == 0;
    if (!overridden) env.push_back(std::move(entry));
  }
  for (const auto& [name, value] : vars) {
    env.push_back(name + "=");
    env.back() += value;
  }
  return env;
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
  if (spec.deadline == TimePoint{})
    throw std::logic_error("CommandGroup::start without a deadline");
  std::vector<char*> argv = c_strings(spec.argv);
  std::vector<char*> envp = c_strings(spec.env);
  int report[2], feed[2];
  if (::pipe2(report, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe2");
  if (::pipe2(feed, O_CLOEXEC) != 0) {
    int err = errno;
    for (int fd : report) ::close(fd);
    throw std::system_error(err, std::generic_category(), "pipe2");
  }
  // Orphans of the tree come to leader if the keeper itself is killed.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  KeeperSetup setup{::getpid(), &spec, argv.data(), envp.data(), report[1], feed[0]};
  pid_t keeper = ::fork();
  if (keeper < 0) {
    int err = errno;
    for (int fd : {report[0], report[1], feed[0], feed[1]}) ::close(fd);
    throw std::system_error(err, std::generic_category(), "fork");
  }
  if (keeper == 0) {
    ::close(report[0]);
    ::close(feed[1]);
    run_keeper(setup);
  }
  ::close(report[1]);
  ::close(feed[0]);
  KeeperReport first{};
  if (!read_report(report[0], first) || first.kind != KeeperReport::started) {
    int err = first.kind == KeeperReport::fork_failed ? first.value : ECHILD;
    ::close(report[0]);
    ::close(feed[1]);
    ::waitpid(keeper, nullptr, 0);
    throw std::system_error(err, std::generic_category(), "starting the command");
  }
  ::fcntl(report[0], F_SETFL, ::fcntl(report[0], F_GETFL) | O_NONBLOCK);
  ::fcntl(feed[1], F_SETFL, ::fcntl(feed[1], F_GETFL) | O_NONBLOCK);
  return CommandGroup(keeper, first.value, report[0], feed[1], spec.deadline);
}

CommandGroup::CommandGroup(CommandGroup&& other) noexcept
    : keeper_(other.keeper_),
      pgid_(other.pgid_),
      report_fd_(other.report_fd_),
      deadline_fd_(other.deadline_fd_),
      fed_deadline_(other.fed_deadline_),
      keeper_exited_(other.keeper_exited_),
      descendants_left_(other.descendants_left_),
      deadline_passed_(other.deadline_passed_),
      command_status_(other.command_status_),
      exec_error_(other.exec_error_) {
  other.report_fd_ = -1;
  other.deadline_fd_ = -1;
  other.keeper_exited_ = true;
}

CommandGroup::~CommandGroup() {
  if (report_fd_ >= 0) ::close(report_fd_);
  if (deadline_fd_ >= 0) ::close(deadline_fd_);
}

bool CommandGroup::signal(int sig) const noexcept {
  bool group = ::kill(-pgid_, sig) == 0;
  return signal_descendants(::getpid(), keeper_, sig) > 0 || group;
}

void CommandGroup::feed_deadline(TimePoint deadline) noexcept {
  if (deadline_fd_ < 0 || deadline == fed_deadline_) return;
  std::int64_t ns = std::chrono::nanoseconds(deadline.time_since_epoch()).count();
  if (::write(deadline_fd_, &ns, sizeof ns) == static_cast<ssize_t>(sizeof ns))
    fed_deadline_ = deadline;
}

bool CommandGroup::group_alive() const noexcept { return ::kill(-pgid_, 0) == 0 || errno == EPERM; }

void CommandGroup::handle(const KeeperReport& report) {
  if (report.kind == KeeperReport::command_exited) command_status_ = report.value;
  if (report.kind == KeeperReport::exec_failed) exec_error_ = report.value;
  if (report.kind == KeeperReport::deadline_passed) deadline_passed_ = true;
}

void CommandGroup::poll() {
  KeeperReport report{};
  while (report_fd_ >= 0 && read_report(report_fd_, report)) handle(report);
  for (;;) {  // leader is a subreaper: the keeper, and orphans if the keeper was killed
    int status = 0;
    pid_t p = ::waitpid(-1, &status, WNOHANG);
    descendants_left_ = p >= 0 || errno != ECHILD;
    if (p <= 0) break;
    if (p != keeper_) continue;
    keeper_exited_ = true;
    while (read_report(report_fd_, report)) handle(report);
    ::close(report_fd_);
    report_fd_ = -1;  // the pipe is at EOF now; stop polling it
  }
}

bool CommandGroup::finished() const noexcept {
  return keeper_exited_ && !descendants_left_ && !group_alive();
}

}  // namespace leader::cli
