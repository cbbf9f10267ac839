#pragma once
// Connection settings of the Redis store, parsed from its URI (see README.md for the options).

#include <optional>
#include <string>

#include "leader/time.hpp"
#include "leader/uri.hpp"

namespace leader::detail::redis {

/// How the store reaches the server.
enum class Transport { tcp, tls, unix_socket };

/// Everything the store needs to connect, parsed and validated from the URI.
struct Config {
  Transport transport = Transport::tcp;
  std::string host;         ///< tcp/tls host name or address
  int port = 6379;          ///< tcp/tls port
  std::string socket_path;  ///< unix socket path
  std::optional<std::string> user;
  std::optional<std::string> password;  ///< never printed
  int db = 0;
  std::string prefix = "leader:";  ///< prepended to every key
  Duration connect_timeout = std::chrono::seconds(1);
  Duration command_timeout = std::chrono::seconds(2);
  int pool_size = 8;            ///< most connections open at once
  std::string tls_ca;           ///< CA bundle file; system default paths when empty
  std::string tls_cert;         ///< client certificate file (mutual TLS), optional
  std::string tls_key;          ///< client key file, optional
  bool tls_verify = true;       ///< verify the server certificate and its name
  std::string tls_server_name;  ///< name to verify and send as SNI; `host` when empty
  std::string redacted_uri;     ///< the URI with the password replaced, for messages

  /// Parses a `redis://`, `rediss://` or `unix://` URI; throws InvalidArgument.
  static Config from_uri(const Uri& uri);
  /// "host:port" or the socket path, for messages.
  [[nodiscard]] std::string endpoint() const;
};

}  // namespace leader::detail::redis
