#include "cli_support.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace leader::cli_test {
namespace {

int counter = 0;

test::ChildOptions options(const std::string& dir, const std::vector<std::string>& env) {
  const std::string stem = dir + "/proc" + std::to_string(++counter);
  // The host's LEADER_STORE and friends never leak into the CLI under test.
  return {.env = env,
          .drop_env_prefixes = {"LEADER_"},
          .out = test::Output::file,
          .err = test::Output::file,
          .out_file = stem + ".out",
          .err_file = stem + ".err"};
}

}  // namespace

Process::Process(const std::vector<std::string>& argv, const std::string& dir,
                 const std::vector<std::string>& env)
    : test::ChildProcess(argv, options(dir, env)) {}

int Process::wait(std::chrono::seconds limit) {
  if (auto code = wait_for(limit)) return *code;
  ADD_FAILURE() << "process " << pid() << " did not exit within " << limit.count() << "s";
  return kill();
}

std::string leader_binary() {
  const char* other = std::getenv("LEADER_CLI_TEST_BINARY");  // e.g. an older build to compare
  return other != nullptr && *other != '\0' ? other : LEADER_CLI_BINARY;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

void CliTest::SetUp() {
  char templ[] = "/tmp/leader-cli-XXXXXX";
  ASSERT_NE(::mkdtemp(templ), nullptr);
  dir_ = templ;
  db_ = dir_ + "/leader.db";
  store_ = "sqlite://" + db_;
}

void CliTest::TearDown() {
  if (!HasFailure()) std::filesystem::remove_all(dir_);
}

Process CliTest::start_run(const std::string& lock, const std::vector<std::string>& options,
                           const std::vector<std::string>& command) {
  std::vector<std::string> argv = {leader_binary(), "run", "--store", store_, "--lock", lock};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.emplace_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return Process(argv, dir_);
}

Finished CliTest::run(const std::string& lock, const std::vector<std::string>& options,
                      const std::vector<std::string>& command) {
  Process p = start_run(lock, options, command);
  int code = p.wait();
  return {code, p.out(), p.err()};
}

Finished CliTest::leader(const std::vector<std::string>& args,
                         const std::vector<std::string>& env) {
  std::vector<std::string> argv = {leader_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  Process p(argv, dir_, env);
  int code = p.wait();
  return {code, p.out(), p.err()};
}

Finished CliTest::status(const std::string& lock, const std::vector<std::string>& options) {
  std::vector<std::string> args = {"status", "--store", store_, "--lock", lock};
  args.insert(args.end(), options.begin(), options.end());
  return leader(args);
}

void CliTest::wait_until_held(const std::string& lock) {
  ASSERT_TRUE(eventually([&] { return status(lock).code == 0; })) << lock << " never held";
}

}  // namespace leader::cli_test
