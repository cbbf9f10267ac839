#pragma once
// Child processes of the test suites: spawned with arguments and environment, their output read
// line by line from a pipe or captured in files, waited for with a deadline, paused, killed. The
// one place tests start processes (servers, holders, the CLI under test); a ChildProcess that is
// still running when destroyed is SIGKILLed and reaped, so no test leaks a process.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leader::test {

/// Where a child's stdout or stderr goes.
enum class Output {
  pipe,     ///< a pipe read by read_line / next_line (stderr: the same pipe as stdout)
  inherit,  ///< the test's own stream
  null,     ///< /dev/null
  file,     ///< a file (ChildOptions::out_file / err_file), read back by out() / err()
};

/// How a child is started. The defaults: stdout on a pipe, stderr and stdin inherited.
struct ChildOptions {
  /// "NAME=value" sets NAME (replacing an inherited value); "NAME=" removes NAME.
  std::vector<std::string> env{};
  /// Inherited variables starting with one of these are dropped (e.g. "LEADER_").
  std::vector<std::string> drop_env_prefixes{};
  Output out = Output::pipe;
  Output err = Output::inherit;
  std::string out_file{};   ///< for Output::file (created or truncated)
  std::string err_file{};   ///< for Output::file (created or truncated)
  bool stdin_pipe = false;  ///< true: stdin is a pipe (write_stdin / close_stdin); false: /dev/null
  bool new_process_group = false;  ///< the child leads a process group of its own
  /// Non-empty ("+2h", "-30s"): the child's wall clock is shifted by libfaketime; its monotonic
  /// clock stays real. Throws std::runtime_error when libfaketime is not installed.
  std::string faketime{};
};

/// A started child process. Move-only; the destructor kills (SIGKILL) and reaps a running child.
class ChildProcess {
 public:
  /// Runs `argv` (argv[0] a path or a name looked up in PATH) with stdout on a pipe and the
  /// environment plus `env` ("NAME=value"). Throws std::runtime_error when it cannot start.
  explicit ChildProcess(const std::vector<std::string>& argv,
                        const std::vector<std::string>& env = {});
  /// Runs `argv` as `options` says.
  ChildProcess(const std::vector<std::string>& argv, const ChildOptions& options);
  /// Runs `body` in a forked copy of this process, its stdout on a pipe; the exit status is what
  /// `body` returns (99 when it throws; the message goes to stderr). Only for bodies that start
  /// no threads before they open their own clients.
  static ChildProcess fork(const std::function<int()>& body);
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  /// The next line of the stdout pipe, or nullopt at end of output or after `timeout`.
  std::optional<std::string> next_line(std::chrono::milliseconds timeout);
  /// The next line of the stdout pipe, or "" at end of output or after `timeout`.
  std::string read_line(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  /// Everything left on the stdout pipe until the child closes it or `timeout` passes.
  std::string read_all(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  /// Writes to the stdin pipe (ChildOptions::stdin_pipe).
  void write_stdin(std::string_view text);
  /// Closes the stdin pipe: the child reads end of input.
  void close_stdin();

  /// Sends `sig` to the child (or to its process group with ChildOptions::new_process_group).
  void signal(int sig) const;
  /// SIGSTOP: the child stops answering until resume().
  void pause() const;
  /// SIGCONT.
  void resume() const;
  /// Waits for the exit; the exit status, or 128 + N for signal N.
  int wait();
  /// Waits up to `limit`; the exit status, or nullopt when it still runs (it is left running).
  std::optional<int> wait_for(std::chrono::milliseconds limit);
  /// True once the child has exited (reaps it without blocking).
  bool exited();
  /// SIGKILL (after SIGCONT, for a paused child) and reap; the exit status.
  int kill();
  /// The process id (-1 when nothing was started).
  [[nodiscard]] pid_t pid() const { return pid_; }
  /// The captured stdout file (Output::file), "" when there is none.
  [[nodiscard]] std::string out() const;
  /// The captured stderr file (Output::file), "" when there is none.
  [[nodiscard]] std::string err() const;

 private:
  ChildProcess() = default;
  void close_fds();

  pid_t pid_ = -1;
  int out_ = -1;
  int in_ = -1;
  bool group_ = false;
  bool reaped_ = false;
  int status_ = 0;
  std::string buffer_;
  std::string out_file_;
  std::string err_file_;
};

/// Runs `argv` to completion with `options` (stdout to /dev/null unless set); its exit status.
int run(const std::vector<std::string>& argv, ChildOptions options = {.out = Output::null});

/// True while `pid` exists and is not a zombie.
bool process_running(pid_t pid);

/// The libfaketime library of this machine (multi-threaded variant), or "" when not installed.
std::string faketime_library();

/// Reads a whole file ("" when missing).
std::string read_file(const std::string& path);

/// The space-separated words of a line of child output.
std::vector<std::string> words(const std::string& line);

}  // namespace leader::test
