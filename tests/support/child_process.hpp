#pragma once
// A child process with its stdout on a pipe, killed (SIGKILL) and reaped when destroyed.

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace leader::test {

/// Runs `argv` (argv[0] is the path) with the parent's environment plus `env` ("NAME=value").
class ChildProcess {
 public:
  explicit ChildProcess(const std::vector<std::string>& argv,
                        const std::vector<std::string>& env = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  /// Reads one line of the child's stdout (empty on EOF or after `timeout`).
  std::string read_line(std::chrono::milliseconds timeout);
  /// Sends `sig`.
  void signal(int sig);
  /// Waits for exit; returns the exit status (or 128 + signal).
  int wait();
  /// The child's process id.
  [[nodiscard]] int pid() const { return pid_; }

 private:
  int pid_ = -1;
  int out_ = -1;
  std::string buffer_;
  bool reaped_ = false;
  int status_ = 0;
};

/// The libfaketime library of this machine (multi-threaded variant), or "" when not installed.
std::string faketime_library();

}  // namespace leader::test
