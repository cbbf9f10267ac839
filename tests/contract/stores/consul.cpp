// The contract suite against the Consul HTTP API double (tests/doubles/consul, started by
// scripts/test-servers.sh start consul on 127.0.0.1:18500), NOT against a real Consul. The
// double invalidates a session exactly one TTL after its last renew (--ttl-multiplier 1): the
// earliest Consul promises, so the judged cases see the server's earliest possible expiry. URI
// from LEADER_TEST_CONSUL_URI. An outage is SIGSTOP of the double (PID from
// $LE_TEST_ROOT/pids/consul.pid, or LEADER_TEST_CONSUL_PIDFILE).

#include <string>

#include "server_outage.hpp"

namespace {

std::string consul_uri() {
  return leader::contract::env_or(
      "LEADER_TEST_CONSUL_URI",
      "consul://127.0.0.1:18500?prefix=leader-contract&session_ttl_min=100ms");
}

leader::contract::Backend make_consul_backend() {
  leader::contract::Backend b;
  b.name = "consul";
  b.uri = consul_uri();
  b.open = [] { return leader::open(consul_uri()); };
  leader::contract::set_sigstop_outage(
      b, leader::contract::server_pid_file("LEADER_TEST_CONSUL_PIDFILE", "consul"));
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(Consul, make_consul_backend);
