#pragma once
// The store's view of the shared HTTP transport (src/http, COMMON decision 2): one agent, the ACL
// token as a secret X-Consul-Token header, TLS and pool options from the URI.
//
// Errors: an HTTP reply of any status is a Reply. BackendError{unavailable} when the request was
// certainly not sent, {deadline_exceeded} when it was possibly sent and no complete reply came
// (its outcome is unknown), {failed_precondition} for TLS setup errors (leader::http decides).

#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "config.hpp"

namespace leader::http {
class Client;
}  // namespace leader::http

namespace leader::consul {

/// One complete HTTP reply.
struct Reply {
  long status = 0;
  std::string body;
  std::string consul_index;  ///< the X-Consul-Index header, empty when absent
};

/// A thread-safe, pooled HTTP client of one agent.
class Transport {
 public:
  /// Keeps `config`; connects lazily.
  explicit Transport(const Config& config);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  /// Sends `method` (GET, PUT, DELETE) to `target` (path and query) with `body`.
  [[nodiscard]] Reply send(std::string_view method, const std::string& target,
                           const std::string& body, Deadline deadline);
  /// A GET that may block long (a blocking query) on a connection of its own; nullopt when `stop`
  /// was requested or `deadline` passed before the whole reply came.
  [[nodiscard]] std::optional<Reply> wait(const std::string& target, Deadline deadline,
                                          const std::stop_token& stop);

 private:
  std::unique_ptr<http::Client> client_;  // leader_http stays a private dependency
};

}  // namespace leader::consul
