#pragma once
// Helpers of the CLI integration tests: spawn the real `leader` binary (and shell commands) as
// separate processes with their output captured in files, against a SQLite file of the test.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "timing.hpp"

namespace leader::cli_test {

/// A spawned process (tests/support ChildProcess) with stdout/stderr captured in files.
class Process : public test::ChildProcess {
 public:
  /// Starts `argv` with the test's environment (without LEADER_*) plus `env` ("NAME=value"
  /// replaces NAME; "NAME=" removes it). Output goes to files in `dir`.
  Process(const std::vector<std::string>& argv, const std::string& dir,
          const std::vector<std::string>& env = {});

  /// Waits up to `limit` (then SIGKILLs and fails); returns the exit code, 128+N for signal N.
  int wait(std::chrono::seconds limit = std::chrono::seconds(60));
};

/// The exit code and output of a finished process.
struct Finished {
  int code = -1;
  std::string out;
  std::string err;
};

/// Path of the leader binary under test: $LEADER_CLI_TEST_BINARY, else the one of this build.
std::string leader_binary();

using test::eventually;
using test::process_running;
using test::read_file;
/// The non-empty lines of a file.
std::vector<std::string> read_lines(const std::string& path);

/// Fixture: a fresh directory and SQLite store per test.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  /// `leader run --store <db> --lock <lock> <options...> -- <command...>`, started.
  Process start_run(const std::string& lock, const std::vector<std::string>& options,
                    const std::vector<std::string>& command);
  /// The same, waited for.
  Finished run(const std::string& lock, const std::vector<std::string>& options,
               const std::vector<std::string>& command);
  /// `leader <args...>` waited for (no --store added), with `env` as for Process.
  Finished leader(const std::vector<std::string>& args, const std::vector<std::string>& env = {});
  /// `leader status --store <db> --lock <lock> <options...>` waited for.
  Finished status(const std::string& lock, const std::vector<std::string>& options = {});
  /// Waits until `lock` is held (leader status exits 0).
  void wait_until_held(const std::string& lock);
  /// A path inside the test directory.
  [[nodiscard]] std::string path(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
  std::string db_;
  std::string store_;  ///< sqlite:// URI of db_
};

/// `sh -c <script>`.
inline std::vector<std::string> sh(const std::string& script) { return {"sh", "-c", script}; }

}  // namespace leader::cli_test
