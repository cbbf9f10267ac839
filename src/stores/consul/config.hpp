#pragma once
// Settings of the Consul store, parsed from `consul://` URIs (see README.md, "URI").

#include <optional>
#include <string>

#include "leader/time.hpp"
#include "leader/uri.hpp"

namespace leader::consul {

/// Client settings of one Consul agent.
struct Config {
  std::string base_url;           ///< e.g. "http://127.0.0.1:8500"
  std::string prefix = "leader";  ///< KV key prefix; no leading or trailing '/'
  std::string token;              ///< ACL token sent as X-Consul-Token; empty = the agent's
  bool tls = false;               ///< https to the agent
  std::string tls_ca;             ///< CA bundle (PEM); empty = the system trust store
  std::string tls_cert;           ///< client certificate (PEM)
  std::string tls_key;            ///< the client certificate's key (PEM)
  bool tls_verify = true;         ///< verify the agent's certificate and name
  std::string tls_server_name;    ///< name checked in the agent's certificate, if not the host
  int pool_size = 8;              ///< idle HTTP connections kept
  Duration connect_timeout = std::chrono::seconds(1);
  /// LockDelay of lease sessions; nullopt ("auto", the default): each session's own TTL, at
  /// most Consul's 60 s cap (README.md, "Lock-delay").
  std::optional<Duration> lock_delay;
  Duration session_ttl_min = std::chrono::seconds(10);  ///< the agent's session_ttl_min
  std::string shown;  ///< the URI with its secrets redacted, for messages

  /// Parses `consul://host[:port][?token=...&prefix=...&tls=true&...]`; throws InvalidArgument
  /// naming the bad value and the rule.
  static Config from_uri(const Uri& uri);
};

}  // namespace leader::consul
