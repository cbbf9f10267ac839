#include "cluster.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "leader/errors.hpp"

namespace leader::k8s {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

std::optional<std::string> file_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  return text;
}

std::string host_port(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool in_cluster_environment() {
  return !env("KUBERNETES_SERVICE_HOST").empty() && !env("KUBERNETES_SERVICE_PORT").empty();
}

ClusterConfig in_cluster_config() {
  ClusterConfig c;
  c.in_cluster = true;
  const std::string dir = env("LEADER_K8S_SERVICEACCOUNT_DIR").empty()
                              ? std::string(kServiceAccountDir)
                              : env("LEADER_K8S_SERVICEACCOUNT_DIR");
  const std::string host = env("KUBERNETES_SERVICE_HOST");
  const std::string port = env("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty())
    throw BackendError(ErrorCode::failed_precondition, "k8s",
                       "unable to load in-cluster configuration: KUBERNETES_SERVICE_HOST and "
                       "KUBERNETES_SERVICE_PORT must be defined (k8s:// without a host is for "
                       "pods; give k8s://host:port otherwise)");
  int port_number = 0;
  try {
    port_number = std::stoi(port);
  } catch (const std::exception&) {
  }
  if (port_number <= 0 || port_number > 65535)
    throw BackendError(ErrorCode::failed_precondition, "k8s",
                       "KUBERNETES_SERVICE_PORT '" + port + "' is not a port number");
  c.base_url = "https://" + host_port(host, port_number);
  c.token_file = dir + "/token";
  if (std::ifstream(dir + "/ca.crt").good()) c.ca_file = dir + "/ca.crt";
  c.ns = env("POD_NAMESPACE");
  if (c.ns.empty()) c.ns = file_text(dir + "/namespace").value_or("");
  if (c.ns.empty()) c.ns = "default";
  return c;
}

}  // namespace leader::k8s
