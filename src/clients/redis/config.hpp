#pragma once
// Connection settings of a Redis client, parsed from the store URI (the options: the store's
// README.md). The store's own settings (its key prefix) are the store's (src/stores/redis).

#include <optional>
#include <string>
#include <vector>

#include "leader/time.hpp"
#include "leader/uri.hpp"

namespace leader::redis {

/// How the client reaches the server.
enum class Transport { tcp, tls, unix_socket };

/// A host and port (a Sentinel, or the primary it names).
struct Endpoint {
  std::string host;
  int port = 0;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

/// Everything the client needs to connect, parsed and validated from the URI.
struct ClientConfig {
  Transport transport = Transport::tcp;
  std::string host;         ///< tcp/tls host name or address
  int port = 6379;          ///< tcp/tls port
  std::string socket_path;  ///< unix socket path
  std::optional<std::string> user;
  std::optional<std::string> password;  ///< never printed
  int db = 0;
  Duration connect_timeout = std::chrono::seconds(1);
  Duration command_timeout = std::chrono::seconds(2);
  int pool_size = 8;            ///< most connections open at once
  std::string tls_ca;           ///< CA bundle file; system default paths when empty
  std::string tls_cert;         ///< client certificate file (mutual TLS), optional
  std::string tls_key;          ///< client key file, optional
  bool tls_verify = true;       ///< verify the server certificate and its name
  std::string tls_server_name;  ///< name to verify and send as SNI; `host` when empty
  std::string redacted_uri;     ///< the URI with the password replaced, for messages
  /// Sentinel mode when not empty: the Sentinels asked for the primary of `master_name`
  /// (`redis-sentinel://h1:p1,h2:p2/<name>` or `redis://h1:p1,h2:p2?sentinel=<name>`); `host`
  /// and `port` are then those of the primary found, per connection.
  std::vector<Endpoint> sentinels;
  std::string master_name;  ///< Sentinel mode: the monitored master's name
  /// Cluster mode when not empty (`redis-cluster://h1:p1,h2:p2,...`): the nodes asked for the
  /// slot map; `host`/`port` are then those of each node's own pool.
  std::vector<Endpoint> cluster_seeds;
  /// Sentinel mode: how often the Sentinels are asked again whether the primary moved (0: only
  /// after a failure).
  Duration sentinel_check = std::chrono::milliseconds(250);
  int wait_replicas = 0;  ///< `WAIT` for this many replicas after each acquire and renew
  Duration wait_timeout = std::chrono::milliseconds(100);  ///< `WAIT`'s timeout

  /// True in Sentinel mode.
  [[nodiscard]] bool sentinel() const { return !sentinels.empty(); }
  /// True in Cluster mode.
  [[nodiscard]] bool cluster() const { return !cluster_seeds.empty(); }

  /// The connection settings of a `redis://`, `rediss://`, `unix://`, `redis-sentinel://` or
  /// `redis-cluster://` URI; throws InvalidArgument. Unknown parameters are the caller's to
  /// refuse (the store's Config::from_uri).
  static ClientConfig from_uri(const Uri& uri);
  /// "host:port" or the socket path, for messages.
  [[nodiscard]] std::string endpoint() const;
};

}  // namespace leader::redis
