#pragma once
// Base URLs of leader::http, parsed once at construction (internal to src/http).

#include <string>
#include <vector>

#include "client.hpp"

namespace leader::http::detail {

/// One base URL, ready for requests.
struct Endpoint {
  std::string url;         ///< the prefix a request's target is appended to (no trailing '/')
  std::string shown;       ///< scheme://host:port[/path], for messages
  std::string connect_to;  ///< CURLOPT_CONNECT_TO entry when TLS uses another server name
  bool tls = false;        ///< https://
};

/// Parses and checks `options.base_urls` (and the TLS options against them); throws
/// InvalidArgument naming the rule, never echoing a user or password.
[[nodiscard]] std::vector<Endpoint> parse_endpoints(const ClientOptions& options);

}  // namespace leader::http::detail
