// The contract suite against a real MariaDB server (scripts/test-servers.sh start mariadb;
// scripts/sql-setup.sh mariadb). URI from LEADER_TEST_MYSQL_URI. An outage is SIGSTOP of the
// server process (MariaDB is one process; PID from /tmp/le-test/pids/mariadb.pid, or
// LEADER_TEST_MYSQL_PIDFILE): connections hang and new ones are never served.

#include <string>

#include "server_outage.hpp"

namespace {

using leader::contract::env_or;

std::string mysql_uri() {
  return env_or("LEADER_TEST_MYSQL_URI",
                "mysql://root@127.0.0.1:13306/leader_test?table_prefix=contract_");
}

leader::contract::Backend make_mysql_backend() {
  leader::contract::Backend b;
  b.name = "mariadb";
  b.uri = mysql_uri();
  b.open = [] { return leader::contract::warmed(leader::open(mysql_uri())); };
  leader::contract::set_sigstop_outage(
      b, leader::contract::server_pid_file("LEADER_TEST_MYSQL_PIDFILE", "mariadb"));
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(Mariadb, make_mysql_backend);
