#pragma once
/// @file process_group.hpp
/// Starting the command in its own process group under a keeper process, and the signals leader
/// handles itself.
///
/// Process tree: leader -> keeper -> COMMAND (leader of a new process group, pgid = its pid).
/// The keeper is leader's direct child, in a process group of its own (terminal job control never
/// stops it) and ignores SIGTSTP/SIGTTIN/SIGTTOU. It enforces the lease's local deadline on its
/// own: leader feeds it each new deadline over a pipe, and when one passes without a newer one the
/// keeper SIGTERMs the command's whole tree (its process group and every other descendant, see
/// process_tree.hpp) and SIGKILLs it `grace` later, even while leader is stopped. It has
/// PR_SET_PDEATHSIG, so when leader dies (even by SIGKILL) the keeper SIGKILLs the whole tree. It
/// and leader are child subreapers: orphaned descendants, also those that called setsid(), stay
/// in the tree and are reaped. The keeper exits once the command has exited and it has no
/// descendant left, after reporting the command's wait status to leader through a pipe.

#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "leader/time.hpp"

namespace leader::cli {

/// SIGINT, SIGTERM, SIGHUP and SIGCHLD, blocked in every thread and read from a signalfd.
class SignalChannel {
 public:
  /// Blocks the signals in the calling thread; call it before any other thread starts so that
  /// every thread inherits the mask. Ignores SIGPIPE, and SIGTSTP, SIGTTIN and SIGTTOU (a
  /// suspended leader could not renew its lease).
  SignalChannel();
  ~SignalChannel();
  SignalChannel(const SignalChannel&) = delete;
  SignalChannel& operator=(const SignalChannel&) = delete;

  /// The signalfd to poll.
  [[nodiscard]] int fd() const { return fd_; }
  /// Reads every pending signal (non-blocking); returns their numbers in arrival order.
  std::vector<int> drain();

 private:
  int fd_ = -1;
};

/// Turns the first SIGINT, SIGTERM or SIGHUP read from a SignalChannel into a stop request, on a
/// thread of its own, until finish() or destruction (SIGCHLD is drained and ignored meanwhile).
class SignalStop {
 public:
  SignalStop(SignalChannel& signals, std::stop_source& stop);
  ~SignalStop() { (void)finish(); }
  SignalStop(const SignalStop&) = delete;
  SignalStop& operator=(const SignalStop&) = delete;

  /// The signal received so far, 0 if none.
  [[nodiscard]] int received() const { return received_.load(); }
  /// Stops watching (idempotent); returns the signal received, 0 if none.
  int finish();

 private:
  int done_;
  std::atomic<int> received_{0};
  std::thread thread_;
};

/// What to execute: an already resolved path, its argv and the full environment.
struct CommandSpec {
  std::string path;
  std::vector<std::string> argv;
  std::vector<std::string> env;  ///< "NAME=value"
  /// Descriptors COMMAND inherits (sorted): those leader itself inherited. Every other
  /// descriptor (store connections, ...) is closed at exec.
  std::vector<int> inherited_fds;
  /// The lease's local deadline when the command starts (steady clock); the keeper kills the
  /// tree once it passes without a newer one from feed_deadline().
  TimePoint deadline{};
  /// The keeper's delay between SIGTERM and SIGKILL when the deadline passes.
  Duration grace{};
};

/// This process's environment with `vars` ("NAME", "value") set in the order given, replacing
/// inherited values; an inherited LEADER_SLOT is dropped too (it belongs to another lease).
std::vector<std::string> environment_with(
    const std::vector<std::pair<std::string, std::string>>& vars);

/// The open file descriptors >= 3 of this process; call it before opening anything.
std::vector<int> open_descriptors();

/// Resolves `name` like execvp (PATH search unless it contains '/'). Returns nullopt and sets
/// `error` (an errno) when no executable is found.
std::optional<std::string> resolve_executable(const std::string& name, int& error);

/// One message of the keeper's report pipe.
struct KeeperReport {
  enum Kind : int {
    started = 1,
    exec_failed = 2,
    command_exited = 3,
    fork_failed = 4,
    deadline_passed = 5  ///< the keeper is killing the tree: no newer deadline came in time
  };
  int kind = 0;
  int value = 0;  ///< pid, errno or wait status
};

/// A running command group. Not copyable; the destructor never kills anything.
class CommandGroup {
 public:
  /// Forks the keeper, which starts the command. Returns after the group exists (the command's
  /// pid is known). Throws std::system_error when fork fails.
  static CommandGroup start(const CommandSpec& spec);

  CommandGroup(CommandGroup&& other) noexcept;
  CommandGroup& operator=(CommandGroup&&) = delete;
  CommandGroup(const CommandGroup&) = delete;
  ~CommandGroup();

  /// The command's process group id (its pid).
  [[nodiscard]] pid_t pgid() const { return pgid_; }
  /// The keeper's report pipe, to poll for reports; -1 once the keeper has exited.
  [[nodiscard]] int report_fd() const { return report_fd_; }
  /// Sends `sig` to every process of the group and to every other descendant of leader except
  /// the keeper (those that left the group included); false when none was left.
  bool signal(int sig) const noexcept;
  /// True while any process of the group exists.
  [[nodiscard]] bool group_alive() const noexcept;
  /// Tells the keeper the lease's local deadline after a confirmed renewal (sent only when it
  /// changed; never blocks: if the keeper lags, it keeps an older, earlier deadline).
  void feed_deadline(TimePoint deadline) noexcept;
  /// Reads available reports and reaps the keeper and any orphan re-parented to leader.
  void poll();
  /// True once the keeper has exited, the group is empty and leader has no descendant left.
  [[nodiscard]] bool finished() const noexcept;
  /// True once the keeper reported that the lease's deadline passed and it is killing the tree.
  [[nodiscard]] bool deadline_passed() const { return deadline_passed_; }

  /// The command's wait status once it has exited.
  [[nodiscard]] std::optional<int> command_status() const { return command_status_; }
  /// The errno of a failed execve, if it failed.
  [[nodiscard]] std::optional<int> exec_error() const { return exec_error_; }

 private:
  CommandGroup(pid_t keeper, pid_t pgid, int report_fd, int deadline_fd, TimePoint deadline)
      : keeper_(keeper),
        pgid_(pgid),
        report_fd_(report_fd),
        deadline_fd_(deadline_fd),
        fed_deadline_(deadline) {}
  void handle(const KeeperReport& report);

  pid_t keeper_ = -1;
  pid_t pgid_ = -1;
  int report_fd_ = -1;
  int deadline_fd_ = -1;  ///< write end of the keeper's deadline feed
  TimePoint fed_deadline_{};
  bool keeper_exited_ = false;
  bool descendants_left_ = true;
  bool deadline_passed_ = false;
  std::optional<int> command_status_;
  std::optional<int> exec_error_;
};

}  // namespace leader::cli
