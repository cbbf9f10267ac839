#include "server_outage.hpp"

#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace leader::contract {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

pid_t read_pid_file(const std::string& path) {
  std::ifstream in(path);
  pid_t pid = 0;
  if (!(in >> pid) || pid <= 0)
    throw std::runtime_error("no PID in " + path + " (is the test server running?)");
  return pid;
}

std::string server_pid_file(const char* env, const std::string& server) {
  return env_or(env, env_or("LE_TEST_ROOT", "/tmp/le-test") + "/pids/" + server + ".pid");
}

std::vector<pid_t> with_children(pid_t root) {
  std::vector<pid_t> pids{root};
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    auto close = line.rfind(')');
    if (close == std::string::npos || close + 2 >= line.size()) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == root) pids.push_back(std::stoi(entry.path().filename().string()));
  }
  return pids;
}

void set_sigstop_outage(Backend& b, std::function<std::vector<pid_t>()> pids) {
  struct State {
    std::mutex mu;
    std::vector<pid_t> stopped;
  };
  auto state = std::make_shared<State>();
  b.outage_begin = [state, pids = std::move(pids)] {
    std::lock_guard lock(state->mu);
    if (!state->stopped.empty()) return;
    state->stopped = pids();
    for (pid_t p : state->stopped) ::kill(p, SIGSTOP);
  };
  b.outage_end = [state] {
    std::lock_guard lock(state->mu);
    for (auto it = state->stopped.rbegin(); it != state->stopped.rend(); ++it) ::kill(*it, SIGCONT);
    state->stopped.clear();
  };
}

void set_sigstop_outage(Backend& b, const std::string& pid_file) {
  set_sigstop_outage(b, [pid_file] { return std::vector<pid_t>{read_pid_file(pid_file)}; });
}

}  // namespace leader::contract
