// The contract suite against the Consul HTTP API double (tests/doubles/consul, started by
// scripts/test-servers.sh start consul on 127.0.0.1:18500), NOT against a real Consul. The
// double invalidates a session exactly one TTL after its last renew (--ttl-multiplier 1): the
// earliest Consul promises, so the judged cases see the server's earliest possible expiry. URI
// from LEADER_TEST_CONSUL_URI. An outage is SIGSTOP of the double (PID from
// $LE_TEST_ROOT/pids/consul.pid, or LEADER_TEST_CONSUL_PIDFILE).

#include "server_outage.hpp"

namespace {

leader::contract::Backend make_consul_backend() {
  auto b = leader::contract::shared_server_backend(
      "consul", "LEADER_TEST_CONSUL_URI",
      "consul://127.0.0.1:18500?prefix=leader-contract&session_ttl_min=100ms",
      "LEADER_TEST_CONSUL_PIDFILE", "consul");
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(Consul, make_consul_backend);
