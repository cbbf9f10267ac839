#include "cli_support.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace leader::cli_test {
namespace {

int counter = 0;

std::vector<char*> c_strings(const std::vector<std::string>& items) {
  std::vector<char*> out;
  for (const auto& s : items) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// The test's environment without LEADER_* (so the host's LEADER_STORE never leaks in), plus `env`.
// Variables of `env` that end in '=' with nothing after them are removed instead.
std::vector<std::string> environment(const std::vector<std::string>& env) {
  auto replaced = [&](const std::string& entry) {
    if (entry.rfind("LEADER_", 0) == 0) return true;
    for (const auto& e : env)
      if (entry.rfind(e.substr(0, e.find('=') + 1), 0) == 0) return true;
    return false;
  };
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e)
    if (!replaced(*e)) out.emplace_back(*e);
  for (const auto& e : env)
    if (e.back() != '=') out.push_back(e);
  return out;
}

}  // namespace

Process::Process(const std::vector<std::string>& argv, const std::string& dir,
                 const std::vector<std::string>& env) {
  int n = ++counter;
  out_path_ = dir + "/proc" + std::to_string(n) + ".out";
  err_path_ = dir + "/proc" + std::to_string(n) + ".err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  auto args = c_strings(argv);
  auto full_env = environment(env);
  auto envp = c_strings(full_env);
  int rc = posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    pid_ = -1;
    ADD_FAILURE() << "cannot spawn " << argv[0] << ": " << std::strerror(rc);
  }
}

Process::Process(Process&& other) noexcept
    : pid_(other.pid_),
      out_path_(std::move(other.out_path_)),
      err_path_(std::move(other.err_path_)),
      status_(other.status_) {
  other.pid_ = -1;
}

Process::~Process() {
  if (pid_ > 0 && status_ < 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

int Process::wait(std::chrono::seconds limit) {
  if (pid_ <= 0) return -1;
  if (status_ < 0) {
    bool done = eventually([&] { return exited(); }, limit);
    if (!done) {
      ADD_FAILURE() << "process " << pid_ << " did not exit within " << limit.count() << "s";
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status_, 0);
    }
  }
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  return 128 + WTERMSIG(status_);
}

bool Process::exited() {
  if (pid_ <= 0 || status_ >= 0) return true;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) != pid_) return false;
  status_ = st;
  return true;
}

void Process::signal(int sig) const { ::kill(pid_, sig); }
std::string Process::out() const { return read_file(out_path_); }
std::string Process::err() const { return read_file(err_path_); }

std::string leader_binary() {
  const char* other = std::getenv("LEADER_CLI_TEST_BINARY");  // e.g. an older build to compare
  return other != nullptr && *other != '\0' ? other : LEADER_CLI_BINARY;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

bool process_running(pid_t pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return false;
  auto close_paren = stat.rfind(')');
  return close_paren != std::string::npos && close_paren + 2 < stat.size() &&
         stat[close_paren + 2] != 'Z' && stat[close_paren + 2] != 'X';
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
