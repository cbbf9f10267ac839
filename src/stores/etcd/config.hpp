#pragma once
// Settings of the etcd store, parsed from `etcd://` and `etcds://` URIs.

#include <optional>
#include <string>
#include <vector>

#include "leader/time.hpp"
#include "leader/uri.hpp"

namespace leader::etcd {

/// Client settings of one etcd cluster.
struct Config {
  std::vector<std::string> endpoints;  ///< base URLs, e.g. "http://127.0.0.1:2379", tried in order
  std::string prefix = "/leader";      ///< key prefix; no trailing '/'
  std::optional<std::string> user;     ///< etcd v3 auth user
  std::optional<std::string> password;
  std::string ca_file;    ///< etcds: CA bundle (PEM); empty = the system trust store
  std::string cert_file;  ///< etcds: client certificate (PEM) for --client-cert-auth
  std::string key_file;   ///< etcds: client private key (PEM)
  Duration connect_timeout = std::chrono::seconds(1);  ///< per endpoint connection attempt
  Duration request_timeout = Duration{0};  ///< upper bound of one HTTP call; 0 = the deadline only
  std::string shown;                       ///< the URI with its password redacted, for messages

  /// Parses `etcd://[user:password@]host[:port][,host[:port]...][?prefix=/leader&...]`; throws
  /// InvalidArgument naming the bad value and the rule.
  static Config from_uri(const Uri& uri);
};

}  // namespace leader::etcd
