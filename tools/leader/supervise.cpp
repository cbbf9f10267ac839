// The supervision loop of `leader run`: forwards signals to the command's process group, kills
// the group when the lease is lost, and waits until every process of the group has exited.

#include "supervise.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "exit_codes.hpp"
#include "leader/uri.hpp"

namespace leader::cli {
namespace {

using Clock = std::chrono::steady_clock;

// How often the group is checked and the keeper fed while nothing else happens (the keeper
// reports exits at once). Bounds how late the keeper learns of a renewal: far below ttl / 3.
constexpr auto kTick = std::chrono::milliseconds(50);

// An eventfd written by a stop_callback when the lease's stop_token fires.
class StopEvent {
 public:
  explicit StopEvent(const std::stop_token& token)
      : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)), callback_(token, Notify{fd_}) {}
  ~StopEvent() { ::close(fd_); }
  StopEvent(const StopEvent&) = delete;
  StopEvent& operator=(const StopEvent&) = delete;
  [[nodiscard]] int fd() const { return fd_; }
  void clear() const {
    std::uint64_t value = 0;
    while (::read(fd_, &value, sizeof value) > 0) {
    }
  }

 private:
  struct Notify {
    int fd;
    void operator()() const noexcept {
      std::uint64_t one = 1;
      [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
    }
  };
  int fd_;
  std::stop_callback<Notify> callback_;
};

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// State of one supervision.
struct Supervision {
  CommandGroup& group;
  const RunOptions& options;
  const Log& log;
  bool lease_lost = false;
  int forwarded = 0;      // the last signal forwarded to the group
  int stop_requests = 0;  // SIGINT/SIGTERM received so far
  bool terminating = false;
  std::optional<Clock::time_point> kill_at;

  // SIGTERM now, SIGKILL once --grace has passed.
  void terminate() {
    if (terminating) return;
    terminating = true;
    group.signal(SIGTERM);
    kill_at = Clock::now() + options.grace;
  }

  void on_lease_lost(const LeaseWatch& lease) {
    lease_lost = true;
    std::string reason = lease.reason ? lease.reason() : std::string();
    if (reason.empty() && group.deadline_passed())
      reason = "no renewal was confirmed before the local deadline; the keeper enforced it";
    log.error("lease on '" + lease.lock + "' lost" + (reason.empty() ? "" : " (" + reason + ")") +
              "; terminating process group " + std::to_string(group.pgid()) + " (SIGKILL in " +
              format_duration(options.grace) + ")");
    terminate();
  }

  void on_signals(const std::vector<int>& signals, const LeaseWatch& lease) {
    for (int sig : signals) {
      if (sig == SIGCHLD) continue;
      forwarded = sig;
      log.info("forwarding " + signal_name(sig) + " to process group " +
               std::to_string(group.pgid()));
      group.signal(sig);
      if ((sig == SIGINT || sig == SIGTERM) && lease.on_stop_signal) lease.on_stop_signal();
      if ((sig == SIGINT || sig == SIGTERM) && ++stop_requests == 2) kill_after_grace(sig);
    }
  }

  // A repeated SIGINT/SIGTERM: the command gets --grace to finish, then the tree is SIGKILLed.
  void kill_after_grace(int sig) {
    auto at = Clock::now() + options.grace;
    if (kill_at && *kill_at <= at) return;
    kill_at = at;
    log.notice("second stop signal (" + signal_name(sig) + "); SIGKILL to process group " +
               std::to_string(group.pgid()) + " in " + format_duration(options.grace));
  }

  // Escalation: SIGKILL after the grace period; stragglers after a forwarded signal are
  // terminated once the command itself has exited.
  void escalate() {
    if (forwarded != 0 && group.command_status() && !terminating) {
      log.info("command exited after " + signal_name(forwarded) +
               "; terminating the rest of its process group");
      terminate();
    }
    if (kill_at && Clock::now() >= *kill_at) group.signal(SIGKILL);
  }

  [[nodiscard]] int poll_timeout_ms() const {
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(kTick);
    if (kill_at) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*kill_at - Clock::now());
      wait = std::clamp(left + std::chrono::milliseconds(1), std::chrono::milliseconds(0), wait);
    }
    return static_cast<int>(wait.count());
  }

  [[nodiscard]] int exit_code() const {
    if (lease_lost) return kExitLeaseLost;
    if (auto err = group.exec_error()) {
      log.error("cannot execute '" + options.command.front() + "': " + std::strerror(*err));
      return *err == ENOENT ? kExitNotFound : kExitCannotExecute;
    }
    auto status = group.command_status();
    if (!status) {
      log.error("the exit status of the command is unknown (its keeper process was killed)");
      return kExitOsError;
    }
    if (WIFEXITED(*status)) return WEXITSTATUS(*status);
    if (WIFSIGNALED(*status)) return kExitSignalBase + WTERMSIG(*status);
    return kExitOsError;
  }
};

}  // namespace

int supervise(CommandGroup& group, SignalChannel& signals, const LeaseWatch& lease,
              const RunOptions& options, const Log& log) {
  return supervise(group, &signals, lease, options, log);
}

int supervise(CommandGroup& group, SignalChannel* signals, const LeaseWatch& lease,
              const RunOptions& options, const Log& log) {
  Supervision s{group, options, log, false, 0, 0, false, std::nullopt};
  StopEvent lost(lease.lost);
  bool shutting_down = false;
  for (;;) {
    if (lease.deadline && !lease.lost.stop_requested()) group.feed_deadline(lease.deadline());
    group.poll();
    if (!shutting_down && lease.shutdown.stop_requested() && !group.finished()) {
      shutting_down = true;
      log.notice("stopping: SIGTERM to process group " + std::to_string(group.pgid()) +
                 " (SIGKILL in " + format_duration(options.grace) + ")");
      s.terminate();
    }
    bool lost_now = (!shutting_down && lease.lost.stop_requested()) || group.deadline_passed();
    if (!s.lease_lost && lost_now) s.on_lease_lost(lease);
    if (group.finished()) break;
    s.escalate();
    pollfd fds[3] = {{signals != nullptr ? signals->fd() : -1, POLLIN, 0},
                     {group.report_fd(), POLLIN, 0},
                     {lost.fd(), POLLIN, 0}};
    if (::poll(fds, 3, s.poll_timeout_ms()) < 0 && errno != EINTR) break;
    if ((fds[2].revents & POLLIN) != 0) lost.clear();
    if (signals != nullptr) s.on_signals(signals->drain(), lease);
  }
  return s.exit_code();
}

}  // namespace leader::cli
