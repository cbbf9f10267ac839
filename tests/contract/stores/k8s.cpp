// The contract suite against the Kubernetes API double (tests/doubles/k8s, started by
// scripts/test-servers.sh start k8s on 127.0.0.1:16443): tested against a double, not against a
// real kube-apiserver. URI from LEADER_TEST_K8S_URI. An outage is SIGSTOP of the double (PID from
// $LE_TEST_ROOT/pids/k8s.pid, or LEADER_TEST_K8S_PIDFILE): connections are accepted by the kernel
// but never answered.

#include "server_outage.hpp"

namespace {

leader::contract::Backend make_k8s_backend() {
  auto b = leader::contract::shared_server_backend(
      "k8s", "LEADER_TEST_K8S_URI", "k8s://127.0.0.1:16443?tls=false&namespace=contract",
      "LEADER_TEST_K8S_PIDFILE", "k8s");
  // A Lease counts whole seconds and the store refuses a ttl under one (granted ttls round down):
  // the suite's half-unit ttls must be whole seconds.
  b.lease_unit = std::chrono::milliseconds(2000);
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(K8s, make_k8s_backend);
