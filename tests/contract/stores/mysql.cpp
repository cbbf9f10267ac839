// The contract suite against a real MariaDB server (scripts/test-servers.sh start mariadb;
// scripts/sql-setup.sh mariadb). URI from LEADER_TEST_MYSQL_URI. An outage is SIGSTOP of the
// server process (MariaDB is one process; PID from /tmp/le-test/pids/mariadb.pid, or
// LEADER_TEST_MYSQL_PIDFILE): connections hang and new ones are never served.

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

std::string mysql_uri() {
  return env_or("LEADER_TEST_MYSQL_URI",
                "mysql://root@127.0.0.1:13306/leader_test?table_prefix=contract_");
}

pid_t server_pid() {
  const std::string path = env_or("LEADER_TEST_MYSQL_PIDFILE", "/tmp/le-test/pids/mariadb.pid");
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
  ::kill(stopped, SIGSTOP);
}

void outage_end() {
  std::lock_guard lock(outage_mu);
  if (stopped != 0) ::kill(stopped, SIGCONT);
  stopped = 0;
}

leader::contract::Backend make_mysql_backend() {
  leader::contract::Backend b;
  b.name = "mariadb";
  b.uri = mysql_uri();
  b.open = [] { return leader::open(mysql_uri()); };
  b.outage_begin = outage_begin;
  b.outage_end = outage_end;
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(Mariadb, make_mysql_backend);
