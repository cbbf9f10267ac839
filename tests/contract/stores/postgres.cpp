// The contract suite against a real PostgreSQL server (scripts/test-servers.sh start postgres;
// scripts/sql-setup.sh postgres). URI from LEADER_TEST_POSTGRES_URI. An outage is SIGSTOP of the
// postmaster and every backend it forked (read from /tmp/le-test/pids/postgres.pid, or
// LEADER_TEST_POSTGRES_PIDFILE): connections hang and new ones are never served.

#include <signal.h>
#include <sys/types.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "contract.hpp"

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string postgres_uri() {
  return env_or("LEADER_TEST_POSTGRES_URI",
                "postgresql://postgres@127.0.0.1:15432/leader_test?table_prefix=contract_");
}

pid_t read_pid(const std::string& path) {
  std::ifstream in(path);
  pid_t pid = 0;
  in >> pid;
  if (pid <= 0) throw std::runtime_error("no PID in " + path);
  return pid;
}

// The postmaster followed by the PIDs of all its children (from /proc/<pid>/stat).
std::vector<pid_t> server_pids() {
  pid_t root = read_pid(env_or("LEADER_TEST_POSTGRES_PIDFILE", "/tmp/le-test/pids/postgres.pid"));
  std::vector<pid_t> pids{root};
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == root) pids.push_back(std::stoi(entry.path().filename().string()));
  }
  return pids;
}

std::mutex outage_mu;
std::vector<pid_t> stopped;

void outage_begin() {
  std::lock_guard lock(outage_mu);
  if (!stopped.empty()) return;
  stopped = server_pids();
  for (pid_t p : stopped) ::kill(p, SIGSTOP);
}

void outage_end() {
  std::lock_guard lock(outage_mu);
  for (auto it = stopped.rbegin(); it != stopped.rend(); ++it) ::kill(*it, SIGCONT);
  stopped.clear();
}

leader::contract::Backend make_postgres_backend() {
  leader::contract::Backend b;
  b.name = "postgres";
  b.uri = postgres_uri();
  b.open = [] { return leader::open(postgres_uri()); };
  b.outage_begin = outage_begin;
  b.outage_end = outage_end;
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(Postgres, make_postgres_backend);
