#pragma once
// Settings of the MongoDB store, parsed from `mongodb://` URIs.

#include <optional>
#include <string>
#include <vector>

#include "leader/time.hpp"
#include "leader/uri.hpp"

namespace leader::mongodb {

/// Client settings of one MongoDB deployment.
struct Config {
  std::vector<std::string> hosts;   ///< "host:port", tried by libmongoc's server selection
  std::string database = "leader";  ///< from the URI path
  std::string prefix = "leader_";   ///< collection prefix: <prefix>locks, <prefix>candidates
  std::optional<std::string> user;  ///< authentication user (libmongoc's default mechanism)
  std::optional<std::string> password;
  std::optional<std::string> auth_source;  ///< authSource
  std::optional<std::string> replica_set;  ///< replicaSet
  std::string write_concern = "majority";  ///< `w`: "majority", a tag name, or a number >= 1
  Duration wtimeout{0};                    ///< writeConcern.wtimeout; 0 = the call's deadline
  bool journal = false;                    ///< writeConcern.j
  int pool_size = 4;                       ///< libmongoc clients kept (one connection each)
  Duration connect_timeout = std::chrono::seconds(1);  ///< TCP + handshake of a new connection
  Duration socket_timeout = std::chrono::seconds(30);  ///< cap of one call (besides its deadline)
  Duration gc_after = std::chrono::hours(24 * 7);      ///< TTL index of idle candidate entries
  bool create_indexes = true;  ///< create the candidates' indexes on first use
  bool tls = false;            ///< tls / ssl
  std::string tls_ca;          ///< CA bundle (PEM); empty: the system store
  std::string tls_cert;        ///< client certificate + key in one PEM file
  bool tls_verify = true;      ///< false: accept any certificate and host name
  std::string shown;           ///< the URI with its secrets redacted, for messages

  /// Parses `mongodb://[user:password@]host[:port][,host[:port]...][/database][?options]`;
  /// throws InvalidArgument naming the bad value and the rule.
  static Config from_uri(const Uri& uri);
};

}  // namespace leader::mongodb
