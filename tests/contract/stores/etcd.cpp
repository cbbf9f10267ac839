// The contract suite against a real etcd 3.4 (scripts/test-servers.sh start etcd). URI from
// LEADER_TEST_ETCD_URI. An outage is SIGSTOP of the etcd process (PID read from
// /tmp/le-test/pids/etcd.pid, or LEADER_TEST_ETCD_PIDFILE): connections are accepted by the
// kernel but never answered, and leases cannot be kept alive.

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

std::string etcd_uri() {
  return env_or("LEADER_TEST_ETCD_URI", "etcd://127.0.0.1:12379?prefix=/leader-contract");
}

pid_t etcd_pid() {
  const std::string path = env_or("LEADER_TEST_ETCD_PIDFILE", "/tmp/le-test/pids/etcd.pid");
  std::ifstream in(path);
  pid_t pid = 0;
  in >> pid;
  if (pid <= 0) throw std::runtime_error("no etcd PID in " + path);
  return pid;
}

std::mutex outage_mu;
pid_t stopped = 0;

void outage_begin() {
  std::lock_guard lock(outage_mu);
  if (stopped != 0) return;
  stopped = etcd_pid();
  ::kill(stopped, SIGSTOP);
}

void outage_end() {
  std::lock_guard lock(outage_mu);
  if (stopped == 0) return;
  ::kill(stopped, SIGCONT);
  stopped = 0;
}

leader::contract::Backend make_etcd_backend() {
  leader::contract::Backend b;
  b.name = "etcd";
  b.uri = etcd_uri();
  b.open = [] { return leader::open(etcd_uri()); };
  b.outage_begin = outage_begin;
  b.outage_end = outage_end;
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(Etcd, make_etcd_backend);
