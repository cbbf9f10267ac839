// The contract suite against the Kubernetes API double (tests/doubles/k8s, started by
// scripts/test-servers.sh start k8s on 127.0.0.1:16443): tested against a double, not against a
// real kube-apiserver. URI from LEADER_TEST_K8S_URI. An outage is SIGSTOP of the double (PID from
// $LE_TEST_ROOT/pids/k8s.pid, or LEADER_TEST_K8S_PIDFILE): connections are accepted by the kernel
// but never answered.

#include <string>

#include "server_outage.hpp"

namespace {

std::string k8s_uri() {
  return leader::contract::env_or("LEADER_TEST_K8S_URI",
                                  "k8s://127.0.0.1:16443?tls=false&namespace=contract");
}

leader::contract::Backend make_k8s_backend() {
  leader::contract::Backend b;
  b.name = "k8s";
  b.uri = k8s_uri();
  b.open = [] { return leader::open(k8s_uri()); };
  leader::contract::set_sigstop_outage(
      b, leader::contract::server_pid_file("LEADER_TEST_K8S_PIDFILE", "k8s"));
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(K8s, make_k8s_backend);
