#pragma once
// The etcd v3 JSON gateway client: POSTs JSON to /v3/... on one endpoint of the cluster, with
// failover, keep-alive connections, TLS and v3 auth. Thread-safe: every call borrows one libcurl
// easy handle (one kept-alive connection) from a small pool.

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "leader/time.hpp"

namespace leader::etcd {

/// gRPC status codes that etcd returns and the store reacts to.
enum GrpcCode : int {
  kOk = 0,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kUnavailable = 14,
  kUnauthenticated = 16,
};

/// The outcome of one gateway call: etcd's status and its reply.
struct Reply {
  int code = kOk;       ///< gRPC status code; kOk on success
  std::string message;  ///< etcd's error text when code != kOk
  nlohmann::json body;  ///< the reply (the first message of a streamed reply)
  [[nodiscard]] bool ok() const { return code == kOk; }
};

/// A client of one etcd cluster's JSON gateway.
class Gateway {
 public:
  /// Keeps `config`; connects lazily on the first call.
  explicit Gateway(Config config);
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  /// POSTs `request` to `path` (e.g. "/v3/kv/txn") and returns etcd's status and reply. Tries
  /// the next endpoint only when a connection could not be made (the request was not sent).
  /// Transport failures throw BackendError: unavailable (no endpoint reachable, connection
  /// dropped), deadline_exceeded (no answer before `deadline`), failed_precondition (TLS, auth).
  [[nodiscard]] Reply post(std::string_view path, const nlohmann::json& request, Deadline deadline);
  /// As post(), but a non-OK status throws BackendError with the code mapped by fail().
  nlohmann::json call(std::string_view path, const nlohmann::json& request, Deadline deadline);
  /// Throws the BackendError for a failed reply; `what` names the operation.
  [[noreturn]] void fail(const Reply& reply, std::string_view what) const;
  /// The settings this client was made from.
  [[nodiscard]] const Config& config() const { return config_; }

 private:
  struct Transfer;
  Transfer send(std::string_view path, const std::string& payload, const std::string& token,
                Deadline deadline);
  Transfer perform(void* curl, const std::string& url, const std::string& payload,
                   const std::string& token, Deadline deadline) const;
  std::string auth_token(Deadline deadline, const std::string& rejected);
  void* take_handle();
  void give_handle(void* curl);

  Config config_;
  std::atomic<std::size_t> preferred_{0};  // index of the endpoint that answered last
  std::mutex mu_;
  std::vector<void*> idle_;  // CURL* easy handles, each with its kept-alive connection
  std::string token_;        // v3 auth token (simple or JWT), refreshed when rejected
};

}  // namespace leader::etcd
