#include "config.hpp"

#include <cstdlib>
#include <vector>

#include "clients/k8s/kubeconfig.hpp"
#include "http/json.hpp"
#include "leader/errors.hpp"

namespace leader::k8s {
namespace {

constexpr int kDefaultTlsPort = 443;
constexpr int kDefaultPlainPort = 80;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
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
  if (auto ca = uri.param("tls_ca")) {
    c.ca_file = *ca;
    c.ca_pem.clear();
  }
  const auto cert = uri.param("tls_cert");
  const auto key = uri.param("tls_key");
  if (cert || key) {  // replaces a kubeconfig user's client certificate
    c.cert_file = cert.value_or("");
    c.key_file = key.value_or("");
    c.cert_pem.clear();
    c.key_pem.clear();
  }
  c.tls_verify = uri.bool_param("tls_verify", c.tls_verify);
  if (auto name = uri.param("tls_server_name")) c.tls_server_name = *name;
  const bool any =
      uri.param("tls_ca") || cert || key || uri.param("tls_server_name") || uri.param("tls_verify");
  if (!tls && any)
    throw InvalidArgument("store URI '" + c.shown +
                          "': tls_* parameters need TLS; drop tls=false (or use an https:// "
                          "server in the kubeconfig)");
  if (c.cert_file.empty() != c.key_file.empty() && (cert || key))
    throw InvalidArgument("store URI '" + c.shown +
                          "': give both tls_cert and tls_key for a client certificate, or neither");
}

void apply_token_params(const Uri& uri, Config& c) {
  const auto token = uri.param("token");
  const auto file = uri.param("token_file");
  if (token && !token->empty() && file)
    throw InvalidArgument("store URI '" + c.shown + "' gives both token and token_file; give one");
  if (token) {  // replaces the in-cluster or kubeconfig token
    c.token = *token;
    if (!token->empty()) c.token_file.clear();
  }
  if (file) {
    c.token_file = *file;
    c.token.clear();
  }
}

/// The configuration of `k8s://` without a host (README.md, "Authentication"): ?kubeconfig=,
/// else in-cluster (unless ?context= asks for a kubeconfig), else KUBECONFIG / ~/.kube/config.
ClusterConfig hostless_config(const Uri& uri, const std::string& shown) {
  const auto file = uri.param("kubeconfig");
  const auto context = uri.param("context");
  if (file && file->empty())
    throw InvalidArgument("URI parameter 'kubeconfig' of '" + shown + "' names no file");
  if (context && context->empty())
    throw InvalidArgument("URI parameter 'context' of '" + shown + "' names no context");
  if (file) return load_kubeconfig({*file}, context.value_or(""));
  if (!context && in_cluster_environment()) return in_cluster_config();
  const std::vector<std::string> files = default_kubeconfig_files();
  if (!files.empty()) return load_kubeconfig(files, context.value_or(""));
  const std::string kubeconfig = env("KUBECONFIG");
  const std::string looked = kubeconfig.empty()
                                 ? "~/.kube/config does not exist"
                                 : "no file of KUBECONFIG '" + kubeconfig + "' exists";
  if (context)
    throw BackendError(ErrorCode::failed_precondition, "k8s",
                       "store URI '" + shown + "' asks for a kubeconfig context, but " + looked +
                           " (give ?kubeconfig=FILE)");
  throw BackendError(ErrorCode::failed_precondition, "k8s",
                     "no configuration for '" + shown +
                         "': not in a pod (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
                         "are not defined) and no kubeconfig (" +
                         looked + "); give k8s://host:port or ?kubeconfig=FILE");
}

}  // namespace

Config Config::from_uri(const Uri& uri) {
  const std::string shown = uri.redacted();
  if (uri.scheme != "k8s") throw InvalidArgument("store URI '" + shown + "' is not a k8s:// URI");
  uri.expect_params({"namespace", "token", "token_file", "tls", "tls_ca", "tls_cert", "tls_key",
                     "tls_verify", "tls_server_name", "pool_size", "connect_timeout", "timeout",
                     "kubeconfig", "context"});
  if (uri.user || uri.password)
    throw InvalidArgument("store URI '" + shown +
                          "' carries a user or password; give a bearer token with ?token_file=");
  if (!uri.path.empty() && uri.path != "/")
    throw InvalidArgument("store URI '" + shown + "' has path '" + uri.path +
                          "'; k8s URIs take no path (set the namespace with ?namespace=)");
  if (uri.hosts.size() > 1)
    throw InvalidArgument("store URI '" + shown + "' names several hosts; give one API server");
  if (!uri.hosts.empty() && (uri.param("kubeconfig") || uri.param("context")))
    throw InvalidArgument("store URI '" + shown +
                          "' names a server and a kubeconfig or context; give one (the "
                          "kubeconfig's cluster names the server)");
  Config c;
  if (uri.hosts.empty()) static_cast<ClusterConfig&>(c) = hostless_config(uri, shown);
  const bool from_kubeconfig = !c.kubeconfig.empty();
  c.shown = from_kubeconfig
                ? shown + " (kubeconfig '" + c.kubeconfig + "', context '" + c.context + "')"
                : shown;
  if (from_kubeconfig && uri.param("tls"))
    throw InvalidArgument("store URI '" + c.shown +
                          "': drop tls=; the kubeconfig's server URL says http:// or https://");
  const bool tls = c.in_cluster || (from_kubeconfig ? c.base_url.rfind("https://", 0) == 0
                                                    : uri.bool_param("tls", true));
  if (c.in_cluster && uri.param("tls") && !uri.bool_param("tls", true))
    throw InvalidArgument("store URI '" + shown + "': the in-cluster API server needs TLS");
  if (uri.hosts.size() == 1) {
    const auto& h = uri.hosts.front();
    c.base_url = std::string(tls ? "https://" : "http://") +
                 host_port(h.host, h.port.value_or(tls ? kDefaultTlsPort : kDefaultPlainPort));
  }
  apply_tls_params(uri, c, tls);
  c.ns = uri.param("namespace").value_or(c.ns);
  check_namespace(c.ns, c.shown);
  apply_token_params(uri, c);
  const std::string pool = uri.param("pool_size").value_or("8");
  c.pool_size = http::whole_number<int>(pool).value_or(0);
  if (c.pool_size < 1 || c.pool_size > 256 || std::to_string(c.pool_size) != pool)
    throw InvalidArgument("URI parameter 'pool_size' of '" + shown + "' must be 1..256");
  c.connect_timeout = uri.duration_param("connect_timeout", c.connect_timeout);
  if (c.connect_timeout <= Duration{0})
    throw InvalidArgument("URI parameter 'connect_timeout' of '" + shown + "' must be > 0");
  c.request_timeout = uri.duration_param("timeout", c.request_timeout);
  return c;
}

}  // namespace leader::k8s
