#pragma once
// Where and how to reach one Kubernetes API server: its URL, namespace, credentials and TLS, as
// a URI, a kubeconfig (kubeconfig.hpp) or a pod's service-account files give them.

#include <optional>
#include <string>

#include "leader/time.hpp"

namespace leader::k8s {

/// The default directory of a pod's service-account files (token, ca.crt, namespace).
inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Client settings of one Kubernetes API server and namespace.
struct ClusterConfig {
  std::string base_url;         ///< "https://host:port" (or http:// with tls=false)
  std::string ns = "default";   ///< namespace of the Lease objects
  std::string token;            ///< bearer token given inline (secret)
  std::string token_file;       ///< bearer token file, re-read at most every minute
  std::string ca_file;          ///< CA bundle (PEM); empty = the system store
  std::string cert_file;        ///< client certificate (PEM), optional
  std::string key_file;         ///< the client certificate's key (PEM)
  std::string ca_pem;           ///< CA bundle as PEM text (kubeconfig -data); replaces ca_file
  std::string cert_pem;         ///< client certificate as PEM text (kubeconfig -data)
  std::string key_pem;          ///< its key as PEM text (kubeconfig -data; secret)
  bool tls_verify = true;       ///< verify the server's chain and name
  std::string tls_server_name;  ///< SNI / certificate name instead of the host
  int pool_size = 8;            ///< idle kept-alive connections
  Duration connect_timeout = std::chrono::seconds(1);  ///< bound of one connect
  Duration request_timeout = Duration{0};  ///< bound of one request; 0 = the deadline only
  bool in_cluster = false;                 ///< taken from the pod's environment
  std::string kubeconfig;                  ///< the kubeconfig file(s) read, ':'-joined; or empty
  std::string context;                     ///< the kubeconfig context used
  std::string shown;                       ///< the URI with secrets redacted, for messages
};

/// The text of the file `path` without trailing line breaks and spaces; nullopt when it cannot
/// be opened.
[[nodiscard]] std::optional<std::string> file_text(const std::string& path);

/// "host:port", the host in brackets when it is an IPv6 address.
[[nodiscard]] std::string host_port(const std::string& host, int port);

/// Whether this process runs in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are set.
[[nodiscard]] bool in_cluster_environment();

/// The in-cluster configuration as client-go's rest.InClusterConfig reads it:
/// KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT, `<dir>/token`, `<dir>/ca.crt`, and the
/// namespace from POD_NAMESPACE or `<dir>/namespace`. `dir` is kServiceAccountDir unless
/// LEADER_K8S_SERVICEACCOUNT_DIR is set (tests). Throws failed_precondition outside a pod.
[[nodiscard]] ClusterConfig in_cluster_config();

}  // namespace leader::k8s
