// The contract suite against a real ZooKeeper 3.8 server (scripts/test-servers.sh start
// zookeeper). URI from LEADER_TEST_ZOOKEEPER_URI. The session timeout is set to lease_unit so that
// a dead holder's ephemeral node goes after about one lease. An outage is SIGSTOP of the server's
// JVM (PID from /tmp/le-test/pids/zookeeper.pid, or LEADER_TEST_ZOOKEEPER_PIDFILE): connections
// stay open and nothing is answered.

#include <signal.h>
#include <sys/types.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>

#include "contract.hpp"

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string zookeeper_uri() {
  return env_or("LEADER_TEST_ZOOKEEPER_URI",
                "zk://127.0.0.1:12181?session_timeout=2s&root=/leader-contract");
}

pid_t server_pid() {
  std::string path = env_or("LEADER_TEST_ZOOKEEPER_PIDFILE", "/tmp/le-test/pids/zookeeper.pid");
  std::ifstream in(path);
  pid_t pid = 0;
  in >> pid;
  if (pid <= 0) throw std::runtime_error("no PID in " + path);
  return pid;
}

std::mutex outage_mu;
pid_t stopped = 0;

void outage_begin() {
  std::lock_guard lock(outage_mu);
  if (stopped != 0) return;
  stopped = server_pid();
  if (kill(stopped, SIGSTOP) != 0) throw std::runtime_error("cannot SIGSTOP zookeeper");
}

void outage_end() {
  std::lock_guard lock(outage_mu);
  if (stopped == 0) return;
  kill(stopped, SIGCONT);
  stopped = 0;
}

leader::contract::Backend make_zookeeper_backend() {
  leader::contract::Backend b;
  b.name = "zookeeper";
  b.uri = zookeeper_uri();
  b.open = [] { return leader::open(zookeeper_uri()); };
  b.outage_begin = outage_begin;
  b.outage_end = outage_end;
  b.lease_unit = std::chrono::milliseconds(2000);  // = the session timeout of the URI above
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(ZooKeeper, make_zookeeper_backend);
