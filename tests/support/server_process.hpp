#pragma once
// Test servers as processes: the environment overrides of their endpoints, their PID files, a
// pause (SIGSTOP ... SIGCONT) held for a scope, and loopback ports. Used to make a server
// unreachable in a test (an outage) and to start private servers on ports of their own.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace leader::test {

/// The environment variable `name`, or `fallback` when unset or empty.
std::string env_or(const char* name, const std::string& fallback);

/// The PID recorded in a pid file; throws std::runtime_error naming the file.
pid_t read_pid_file(const std::string& path);

/// The pid file of a shared test server: $<env> or $LE_TEST_ROOT/pids/<server>.pid.
std::string server_pid_file(const char* env, const std::string& server);

/// `root` and every process whose parent is `root` (from /proc).
std::vector<pid_t> with_children(pid_t root);

/// Stops processes (SIGSTOP) from construction until resume() or destruction (SIGCONT, in
/// reverse order): the server keeps its connections open and answers nothing meanwhile.
class ProcessPause {
 public:
  explicit ProcessPause(std::vector<pid_t> pids);
  explicit ProcessPause(pid_t pid) : ProcessPause(std::vector<pid_t>{pid}) {}
  ~ProcessPause() { resume(); }
  ProcessPause(const ProcessPause&) = delete;
  ProcessPause& operator=(const ProcessPause&) = delete;
  /// Lets the processes run again (idempotent).
  void resume();

 private:
  std::vector<pid_t> pids_;
};

/// True when something accepts TCP connections on 127.0.0.1:`port`.
bool port_open(int port);

/// Polls until 127.0.0.1:`port` accepts connections; false after `limit`.
bool wait_for_port(int port, std::chrono::milliseconds limit);

/// A loopback port that was free a moment ago, in 20000-31999: below the kernel's ephemeral
/// range, so no outgoing connection takes it before the server binds it.
int free_port();

}  // namespace leader::test
