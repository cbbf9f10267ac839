#pragma once
// kubeconfig files as kubectl and client-go load them (src/stores/k8s/README.md,
// "Authentication"): the context's cluster (server, CA, TLS name, insecure-skip-tls-verify), user
// (token, tokenFile, client certificate and key, as paths or base64 -data) and namespace. What
// this client cannot do (exec and auth-provider plugins, basic auth, impersonation, proxies) is
// refused, never ignored.

#include <string>
#include <vector>

#include "cluster.hpp"

namespace leader::k8s {

/// The kubeconfig files of client-go's default loading rules: the existing files of KUBECONFIG
/// (':'-separated; missing ones are skipped) when it is set and not empty, else ~/.kube/config
/// ($HOME) when it exists; empty when there is none.
[[nodiscard]] std::vector<std::string> default_kubeconfig_files();

/// The client settings of `context` (empty: the current-context) of the kubeconfig `files`,
/// merged as client-go merges KUBECONFIG: the first file that sets current-context wins, and the
/// first file that defines a context, cluster or user of a name wins (stanzas are not merged).
/// Relative paths are resolved against the folder of the file that defined their stanza. The
/// namespace is the context's, "default" when it sets none. Throws InvalidArgument naming the
/// file, the context, cluster or user and the field for a file that cannot be read or parsed, a
/// missing context, cluster, user or server, an unreadable referenced file, bad base64, and
/// every field this client does not support. Never quotes a token or key.
[[nodiscard]] ClusterConfig load_kubeconfig(const std::vector<std::string>& files,
                                            const std::string& context);

}  // namespace leader::k8s
