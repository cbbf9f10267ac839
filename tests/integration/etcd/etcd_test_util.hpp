#pragma once
// Helpers of the etcd integration tests: endpoints from the environment, child processes with a
// readable stdout, and control of the test server started by scripts/test-servers.sh.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "leader/leader.hpp"

namespace leader::etcdtest {

using Ms = std::chrono::milliseconds;

/// The environment variable `name`, or `fallback` when unset or empty.
std::string env_or(const char* name, const std::string& fallback);
/// host:port of the plain test server (LEADER_TEST_ETCD_ENDPOINT, default 127.0.0.1:12379).
std::string endpoint();
/// etcd://<endpoint>?prefix=<prefix>[&extra].
std::string uri(const std::string& prefix, const std::string& extra = "");
/// A lock name unique to this process and call.
std::string unique(const std::string& what);
/// A 5 s deadline.
Deadline soon();
/// The PID of the plain test server (LEADER_TEST_ETCD_PIDFILE, default /tmp/le-test/pids/etcd.pid).
pid_t etcd_pid();

/// A child process whose stdout is readable line by line; killed (SIGKILL) when destroyed.
class Proc {
 public:
  explicit Proc(const std::vector<std::string>& argv);
  ~Proc();
  Proc(const Proc&) = delete;
  Proc& operator=(const Proc&) = delete;
  /// The next stdout line, or nullopt after `timeout` or at end of output.
  std::optional<std::string> read_line(Ms timeout = Ms{10000});
  /// Sends `sig`.
  void signal(int sig);
  /// Waits for exit; the exit status, or 128 + signal.
  int wait();
  [[nodiscard]] pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string buffer_;
  bool exited_ = false;
  int status_ = 0;
};

/// Runs argv to completion; its exit status (128 + signal when killed).
int run(const std::vector<std::string>& argv);

}  // namespace leader::etcdtest
