#pragma once
// Shared helpers for Backends of real servers started by scripts/test-servers.sh: environment
// overrides and an outage made by SIGSTOP/SIGCONT of the server's processes.

#include <sys/types.h>

#include <string>
#include <vector>

#include "contract.hpp"

namespace leader::contract {

/// The environment variable `name`, or `fallback` when unset or empty.
std::string env_or(const char* name, const std::string& fallback);

/// The PID recorded in a pid file; throws std::runtime_error naming the file.
pid_t read_pid_file(const std::string& path);

/// The pid file of a test server: $<env> or $LE_TEST_ROOT/pids/<server>.pid.
std::string server_pid_file(const char* env, const std::string& server);

/// `root` and every process whose parent is `root` (from /proc).
std::vector<pid_t> with_children(pid_t root);

/// Sets `b.outage_begin/outage_end` to SIGSTOP/SIGCONT the processes `pids()` returns.
void set_sigstop_outage(Backend& b, std::function<std::vector<pid_t>()> pids);

/// Sets the outage hooks to SIGSTOP/SIGCONT the single process in `pid_file`.
void set_sigstop_outage(Backend& b, const std::string& pid_file);

}  // namespace leader::contract
