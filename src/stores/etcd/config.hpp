#pragma once
// Settings of the etcd store, parsed from `etcd://` and `etcds://` URIs.

#include <string>

#include "clients/etcd/gateway.hpp"
#include "leader/uri.hpp"

namespace leader::etcd {

/// The store's settings: the cluster's connection (the gateway's) and where its keys live.
struct Config : GatewayConfig {
  std::string prefix = "/leader";  ///< key prefix; no trailing '/'

  /// Parses `etcd://[user:password@]host[:port][,host[:port]...][?prefix=/leader&...]`; throws
  /// InvalidArgument naming the bad value and the rule.
  static Config from_uri(const Uri& uri);
};

}  // namespace leader::etcd
