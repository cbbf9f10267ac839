// The contract suite against the DynamoDB API served by dynalite 4.0.0 (scripts/test-servers.sh
// start dynalite). URI from LEADER_TEST_DYNAMODB_URI. An outage is SIGSTOP of the dynalite node
// process (PID from $LE_TEST_ROOT/pids/dynalite.pid, or LEADER_TEST_DYNALITE_PIDFILE):
// connections are accepted by the kernel but never answered.

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "server_outage.hpp"

namespace {

using leader::contract::env_or;

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

// The PID file may name a wrapper (sh, npm exec) instead of node itself: then stop its node
// child, so that SIGSTOP really freezes the server.
std::vector<pid_t> dynalite_node() {
  const std::string file =
      leader::contract::server_pid_file("LEADER_TEST_DYNALITE_PIDFILE", "dynalite");
  const pid_t pid = leader::contract::read_pid_file(file);
  for (pid_t p : leader::contract::with_children(pid))
    if (comm_of(p) == "node") return {p};
  throw std::runtime_error("PID " + std::to_string(pid) + " from " + file + " is '" + comm_of(pid) +
                           "' and has no node child: not the dynalite process");
}

leader::contract::Backend make_dynamodb_backend() {
  leader::contract::Backend b;
  b.name = "dynamodb";
  b.uri = dynamodb_uri();
  b.open = [] { return leader::open(dynamodb_uri()); };
  leader::contract::set_sigstop_outage(b, dynalite_node);
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(DynamoDb, make_dynamodb_backend);
