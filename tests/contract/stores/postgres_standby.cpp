// The contract suite against PostgreSQL primary + streaming standby (scripts/pg-standby.sh start:
// node a 127.0.0.1:15442 primary, node b 127.0.0.1:15443 its standby, synchronous replication),
// through a multi-host URI with target_session_attrs=read-write, so libpq picks the primary. URI
// from LEADER_TEST_POSTGRES_STANDBY_URI. An outage is SIGSTOP of both nodes' postmasters and
// every process they forked (pid files $LE_TEST_ROOT/pids/pg-ha-a.pid and pg-ha-b.pid).

#include <string>
#include <vector>

#include "server_outage.hpp"

namespace {

using leader::contract::env_or;

std::string standby_uri() {
  return env_or("LEADER_TEST_POSTGRES_STANDBY_URI",
                "postgresql://postgres@127.0.0.1:15442,127.0.0.1:15443/leader_test"
                "?target_session_attrs=read-write&table_prefix=contract_");
}

leader::contract::Backend make_postgres_standby_backend() {
  leader::contract::Backend b;
  b.name = "postgres_standby";
  b.uri = standby_uri();
  b.open = [] { return leader::contract::warmed(leader::open(standby_uri())); };
  leader::contract::set_sigstop_outage(b, [] {
    std::vector<pid_t> all;
    for (const char* node : {"pg-ha-a", "pg-ha-b"}) {
      auto pids = leader::contract::with_children(
          leader::contract::read_pid_file(leader::contract::server_pid_file(
              node == std::string("pg-ha-a") ? "LEADER_TEST_PG_HA_A_PIDFILE"
                                             : "LEADER_TEST_PG_HA_B_PIDFILE",
              node)));
      all.insert(all.end(), pids.begin(), pids.end());
    }
    return all;
  });
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(PostgresStandby, make_postgres_standby_backend);
