#include "config.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "leader/errors.hpp"

namespace leader::k8s {
namespace {

constexpr int kDefaultTlsPort = 443;
constexpr int kDefaultPlainPort = 80;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string trimmed_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
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

void check_namespace(const std::string& ns, const std::string& shown) {
  bool ok = !ns.empty() && ns.size() <= 63 && ns.front() != '-' && ns.back() != '-';
  for (char c : ns) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
  if (!ok)
    throw InvalidArgument("namespace '" + ns + "' of '" + shown +
                          "' is not a DNS-1123 label (lower-case letters, digits and '-', at "
                          "most 63 characters)");
}

void apply_tls_params(const Uri& uri, Config& c, bool tls) {
  c.ca_file = uri.param("tls_ca").value_or(c.ca_file);
  c.cert_file = uri.param("tls_cert").value_or("");
  c.key_file = uri.param("tls_key").value_or("");
  c.tls_verify = uri.bool_param("tls_verify", true);
  c.tls_server_name = uri.param("tls_server_name").value_or("");
  const bool any = !c.ca_file.empty() || !c.cert_file.empty() || !c.key_file.empty() ||
                   !c.tls_server_name.empty() || uri.param("tls_verify");
  if (!tls && any)
    throw InvalidArgument("store URI '" + c.shown + "': tls_* parameters need TLS; drop tls=false");
  if (c.cert_file.empty() != c.key_file.empty())
    throw InvalidArgument("store URI '" + c.shown +
                          "': give both tls_cert and tls_key for a client certificate, or neither");
}

}  // namespace

Config in_cluster_config() {
  Config c;
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
  if (c.ns.empty()) c.ns = trimmed_file(dir + "/namespace");
  if (c.ns.empty()) c.ns = "default";
  return c;
}

Config Config::from_uri(const Uri& uri) {
  const std::string shown = uri.redacted();
  if (uri.scheme != "k8s") throw InvalidArgument("store URI '" + shown + "' is not a k8s:// URI");
  uri.expect_params({"namespace", "token", "token_file", "tls", "tls_ca", "tls_cert", "tls_key",
                     "tls_verify", "tls_server_name", "pool_size", "connect_timeout", "timeout"});
  if (uri.user || uri.password)
    throw InvalidArgument("store URI '" + shown +
                          "' carries a user or password; give a bearer token with ?token_file=");
  if (!uri.path.empty() && uri.path != "/")
    throw InvalidArgument("store URI '" + shown + "' has path '" + uri.path +
                          "'; k8s URIs take no path (set the namespace with ?namespace=)");
  if (uri.hosts.size() > 1)
    throw InvalidArgument("store URI '" + shown + "' names several hosts; give one API server");
  Config c = uri.hosts.empty() ? in_cluster_config() : Config{};
  c.shown = shown;
  const bool tls = c.in_cluster || uri.bool_param("tls", true);
  if (c.in_cluster && uri.param("tls") && !uri.bool_param("tls", true))
    throw InvalidArgument("store URI '" + shown + "': the in-cluster API server needs TLS");
  if (!c.in_cluster) {
    const auto& h = uri.hosts.front();
    c.base_url = std::string(tls ? "https://" : "http://") +
                 host_port(h.host, h.port.value_or(tls ? kDefaultTlsPort : kDefaultPlainPort));
  }
  apply_tls_params(uri, c, tls);
  c.ns = uri.param("namespace").value_or(c.ns);
  check_namespace(c.ns, shown);
  if (auto t = uri.param("token")) c.token = *t;
  if (auto f = uri.param("token_file")) c.token_file = *f;
  if (!c.token.empty() && uri.param("token_file"))
    throw InvalidArgument("store URI '" + shown + "' gives both token and token_file; give one");
  if (!c.token.empty()) c.token_file.clear();
  const std::string pool = uri.param("pool_size").value_or("8");
  try {
    c.pool_size = std::stoi(pool);
  } catch (const std::exception&) {
    c.pool_size = 0;
  }
  if (c.pool_size < 1 || c.pool_size > 256 || std::to_string(c.pool_size) != pool)
    throw InvalidArgument("URI parameter 'pool_size' of '" + shown + "' must be 1..256");
  c.connect_timeout = uri.duration_param("connect_timeout", c.connect_timeout);
  if (c.connect_timeout <= Duration{0})
    throw InvalidArgument("URI parameter 'connect_timeout' of '" + shown + "' must be > 0");
  c.request_timeout = uri.duration_param("timeout", c.request_timeout);
  return c;
}

}  // namespace leader::k8s
