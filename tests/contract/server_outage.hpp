#pragma once
// Outages of Backends of real servers started by scripts/test-servers.sh: SIGSTOP/SIGCONT of the
// server's processes (tests/support/server_process.hpp finds them).

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "contract.hpp"
#include "server_process.hpp"

namespace leader::contract {

using test::env_or;
using test::read_pid_file;
using test::server_pid_file;
using test::with_children;

/// Sets `b.outage_begin/outage_end` to SIGSTOP/SIGCONT the processes `pids()` returns.
void set_sigstop_outage(Backend& b, std::function<std::vector<pid_t>()> pids);

/// Sets the outage hooks to SIGSTOP/SIGCONT the single process in `pid_file`.
void set_sigstop_outage(Backend& b, const std::string& pid_file);

/// A Backend of a shared test server: `name`, the URI $<uri_env> or `default_uri` (opened for
/// every client), and an outage by SIGSTOP of the single process in the pid file
/// $<pid_env> or $LE_TEST_ROOT/pids/<server>.pid.
Backend shared_server_backend(const std::string& name, const char* uri_env,
                              const std::string& default_uri, const char* pid_env,
                              const std::string& server);

}  // namespace leader::contract
