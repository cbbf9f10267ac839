// The contract suite against the Consul HTTP API double (tests/doubles/consul, started by
// scripts/test-servers.sh start consul on 127.0.0.1:18500), NOT against a real Consul. The
// double invalidates a session exactly one TTL after its last renew (--ttl-multiplier 1): the
// earliest Consul promises, so the judged cases see the server's earliest possible expiry. URI
// from LEADER_TEST_CONSUL_URI. An outage is SIGSTOP of the double (PID from
// $LE_TEST_ROOT/pids/consul.pid, or LEADER_TEST_CONSUL_PIDFILE). The store's default lock-delay
// (auto: each session's TTL) holds a key back one more TTL after every expiry, which the
// contract's "an expired lease can be taken at once" cases do not allow for; the suite runs with
// lock_delay=0s, where a takeover comes at the earliest expiry (the stricter case for the judged
// stop signals). The default is judged by tests/integration/consul (ConsulNodes.*).

#include "server_outage.hpp"

namespace {

leader::contract::Backend make_consul_backend() {
  auto b = leader::contract::shared_server_backend(
      "consul", "LEADER_TEST_CONSUL_URI",
      "consul://127.0.0.1:18500?prefix=leader-contract&session_ttl_min=100ms&lock_delay=0s",
      "LEADER_TEST_CONSUL_PIDFILE", "consul");
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(Consul, make_consul_backend);
