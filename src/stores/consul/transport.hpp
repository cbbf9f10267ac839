#pragma once
// A minimal HTTP transport to one Consul agent over libcurl, until the shared src/http client
// lands (COMMON decision 2); the store only uses send() and Reply, so the switch is local.
//
// Errors: an HTTP reply of any status is a Reply. BackendError{unavailable} when the request was
// certainly not sent (resolve or connect failure), {deadline_exceeded} when it was possibly sent
// and no complete reply came (its outcome is unknown), {failed_precondition} for TLS setup errors.

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"

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

 private:
  void* take();
  void give(void* handle);

  Config config_;
  std::mutex mu_;
  std::vector<void*> idle_;
};

}  // namespace leader::consul
