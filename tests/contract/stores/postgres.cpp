// The contract suite against a real PostgreSQL server (scripts/test-servers.sh start postgres;
// scripts/sql-setup.sh postgres). URI from LEADER_TEST_POSTGRES_URI. An outage is SIGSTOP of the
// postmaster and every backend it forked (read from /tmp/le-test/pids/postgres.pid, or
// LEADER_TEST_POSTGRES_PIDFILE): connections hang and new ones are never served.

#include <string>

#include "server_outage.hpp"

namespace {

using leader::contract::env_or;

std::string postgres_uri() {
  return env_or("LEADER_TEST_POSTGRES_URI",
                "postgresql://postgres@127.0.0.1:15432/leader_test?table_prefix=contract_");
}

leader::contract::Backend make_postgres_backend() {
  leader::contract::Backend b;
  b.name = "postgres";
  b.uri = postgres_uri();
  b.open = [] { return leader::contract::warmed(leader::open(postgres_uri())); };
  // The postmaster and every backend it forked.
  leader::contract::set_sigstop_outage(b, [] {
    return leader::contract::with_children(leader::contract::read_pid_file(
        leader::contract::server_pid_file("LEADER_TEST_POSTGRES_PIDFILE", "postgres")));
  });
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(Postgres, make_postgres_backend);
