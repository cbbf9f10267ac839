#pragma once
// Helpers of the ZooKeeper integration tests: the server endpoint, its PID and a pause of it, and
// a child process with stdin on a pipe (all built on tests/support).

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "server_process.hpp"
#include "timing.hpp"

namespace leader::zktest {

using Ms = std::chrono::milliseconds;

using test::env_or;
using test::eventually;
using test::soon;

/// A lock name unique to this process and call.
inline std::string unique(const std::string& what) { return test::unique_name("zk-" + what); }

/// host:port of the test server.
inline std::string hosts() { return env_or("LEADER_TEST_ZOOKEEPER_HOSTS", "127.0.0.1:12181"); }

/// A store URI on the test server with the given query string.
inline std::string uri(const std::string& query) { return "zk://" + hosts() + "/?" + query; }

/// The server JVM's PID.
inline pid_t server_pid() {
  return test::read_pid_file(test::server_pid_file("LEADER_TEST_ZOOKEEPER_PIDFILE", "zookeeper"));
}

/// SIGSTOPs the server for its lifetime (also on assertion failure).
struct ServerPause : test::ProcessPause {
  ServerPause() : test::ProcessPause(server_pid()) {}
};

/// A child process with stdin and stdout on pipes (closing stdin tells a holder to release).
struct Proc : test::ChildProcess {
  explicit Proc(const std::vector<std::string>& argv)
      : test::ChildProcess(argv, test::ChildOptions{.stdin_pipe = true}) {}
};

}  // namespace leader::zktest
