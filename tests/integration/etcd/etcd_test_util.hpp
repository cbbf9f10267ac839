#pragma once
// Helpers of the etcd integration tests: endpoints from the environment and the PID of the test
// server started by scripts/test-servers.sh (processes: tests/support).

#include <sys/types.h>

#include <chrono>
#include <string>

#include "child_process.hpp"
#include "leader/leader.hpp"
#include "server_process.hpp"
#include "timing.hpp"

namespace leader::etcdtest {

using Ms = std::chrono::milliseconds;

using test::ChildProcess;
using test::env_or;
using test::run;

/// host:port of the plain test server (LEADER_TEST_ETCD_ENDPOINT, default 127.0.0.1:12379).
std::string endpoint();
/// etcd://<endpoint>?prefix=<prefix>[&extra].
std::string uri(const std::string& prefix, const std::string& extra = "");
/// A lock name unique to this process and call.
inline std::string unique(const std::string& what) { return test::unique_name(what); }
using test::eventually;
using test::soon;
/// The PID of the plain test server (LEADER_TEST_ETCD_PIDFILE, default /tmp/le-test/pids/etcd.pid).
pid_t etcd_pid();

}  // namespace leader::etcdtest
