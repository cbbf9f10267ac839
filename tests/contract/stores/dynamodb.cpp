// The contract suite against the DynamoDB API served by dynalite 4.0.0 (scripts/test-servers.sh
// start dynalite). URI from LEADER_TEST_DYNAMODB_URI. An outage is SIGSTOP of the dynalite node
// process (PID read from /tmp/le-test/pids/dynalite.pid, or LEADER_TEST_DYNALITE_PIDFILE):
// connections are accepted by the kernel but never answered.

#include <signal.h>
#include <sys/types.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>

#include "contract.hpp"

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string dynamodb_uri() {
  return env_or("LEADER_TEST_DYNAMODB_URI",
                "dynamodb://test:test@127.0.0.1:18000?table=leader_contract&tls=false");
}

std::string comm_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

// The PID file may name a wrapper (sh, npm) instead of node itself: then use its node child, so
// that SIGSTOP really freezes the server.
pid_t dynalite_pid() {
  const std::string path = env_or("LEADER_TEST_DYNALITE_PIDFILE", "/tmp/le-test/pids/dynalite.pid");
  std::ifstream in(path);
  pid_t pid = 0;
  in >> pid;
  if (pid <= 0) throw std::runtime_error("no dynalite PID in " + path);
  if (comm_of(pid) == "node") return pid;
  std::ifstream kids("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  pid_t child = 0;
  while (kids >> child)
    if (comm_of(child) == "node") return child;
  throw std::runtime_error("PID " + std::to_string(pid) + " from " + path + " is '" + comm_of(pid) +
                           "', not the dynalite node process");
}

std::mutex outage_mu;
pid_t stopped = 0;

void outage_begin() {
  std::lock_guard lock(outage_mu);
  if (stopped != 0) return;
  stopped = dynalite_pid();
  ::kill(stopped, SIGSTOP);
}

void outage_end() {
  std::lock_guard lock(outage_mu);
  if (stopped == 0) return;
  ::kill(stopped, SIGCONT);
  stopped = 0;
}

leader::contract::Backend make_dynamodb_backend() {
  leader::contract::Backend b;
  b.name = "dynamodb";
  b.uri = dynamodb_uri();
  b.open = [] { return leader::open(dynamodb_uri()); };
  b.outage_begin = outage_begin;
  b.outage_end = outage_end;
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(DynamoDb, make_dynamodb_backend);
