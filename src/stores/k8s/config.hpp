#pragma once
// Settings of the Kubernetes Lease store, parsed from `k8s://` URIs (see README.md, "URI"); the
// API server's part, and the kubeconfig and in-cluster readers, are the client's (src/clients/k8s).

#include "clients/k8s/cluster.hpp"
#include "leader/uri.hpp"

namespace leader::k8s {

/// The store's settings: one API server and namespace (the client's), read from a URI.
struct Config : ClusterConfig {
  /// Parses `k8s://host[:port][?namespace=...&token_file=...&tls_ca=...]`, or `k8s://` (no host):
  /// `?kubeconfig=`, else the in-cluster configuration, else KUBECONFIG / ~/.kube/config (README,
  /// "Authentication"). Throws InvalidArgument naming the bad value and the rule, and
  /// BackendError{failed_precondition} when no host is given and none of those is found.
  static Config from_uri(const Uri& uri);
};

}  // namespace leader::k8s
