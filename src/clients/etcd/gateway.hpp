#pragma once
// The etcd v3 JSON gateway client: POSTs JSON to /v3/... on one endpoint of the cluster over
// leader::http (failover for unsent requests, keep-alive pool, TLS), plus etcd's status codes and
// v3 auth. Thread-safe.

#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "http/client.hpp"
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

/// Connection settings of one etcd cluster's gateway.
struct GatewayConfig {
  std::vector<std::string> endpoints;  ///< base URLs, e.g. "http://127.0.0.1:2379", tried in order
  std::optional<std::string> user;     ///< etcd v3 auth user
  std::optional<std::string> password;
  std::string ca_file;    ///< https: CA bundle (PEM); empty = the system trust store
  std::string cert_file;  ///< https: client certificate (PEM) for --client-cert-auth
  std::string key_file;   ///< https: client private key (PEM)
  Duration connect_timeout = std::chrono::seconds(1);  ///< per endpoint connection attempt
  Duration request_timeout = Duration{0};  ///< upper bound of one HTTP call; 0 = the deadline only
  std::string shown;                       ///< the cluster's URI, password redacted, for messages
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
  explicit Gateway(GatewayConfig config);

  /// POSTs `request` to `path` (e.g. "/v3/kv/txn") and returns etcd's status and reply. Tries
  /// the next endpoint only when the request was certainly not sent (leader::http), except for
  /// reads and keep-alives, which a cluster's next member gets again after an unknown outcome.
  /// Transport failures throw BackendError: unavailable (not sent: no endpoint reachable),
  /// deadline_exceeded (possibly sent, no complete answer before `deadline`: outcome unknown),
  /// failed_precondition (TLS, auth).
  [[nodiscard]] Reply post(std::string_view path, const nlohmann::json& request, Deadline deadline);
  /// post() of a request already written as JSON text (`payload`).
  [[nodiscard]] Reply post_text(std::string_view path, const std::string& payload,
                                Deadline deadline);
  /// POSTs `request` to a streaming path ("/v3/watch") on a connection of its own and passes each
  /// message of the reply (one JSON object per line) to `on_message`, in order, until it returns
  /// false, `stop` is requested or `deadline` passes (these end the call normally). A message with
  /// a non-OK status throws BackendError as call() does; transport failures as post().
  void stream(std::string_view path, const nlohmann::json& request, Deadline deadline,
              const std::function<bool(const Reply&)>& on_message, const std::stop_token& stop);
  /// Watches the keys in [key, range_end) (`key` alone when `range_end` is empty) from revision
  /// `from` on, through stream(), until the events of a reply satisfy `awaited` or the watch is
  /// cancelled (a compacted revision, a server shutdown: it may have missed them): true then;
  /// false at `deadline` or on `stop`.
  bool watch(const std::string& key, const std::string& range_end, std::int64_t from,
             Deadline deadline, const std::stop_token& stop,
             const std::function<bool(const nlohmann::json& events)>& awaited);
  /// As post(), but a non-OK status throws BackendError with the code mapped by fail().
  nlohmann::json call(std::string_view path, const nlohmann::json& request, Deadline deadline);
  /// Throws the BackendError for a failed reply; `what` names the operation.
  [[noreturn]] void fail(const Reply& reply, std::string_view what) const;
  /// The settings this client was made from.
  [[nodiscard]] const GatewayConfig& config() const { return config_; }

 private:
  Reply send(std::string_view path, const std::string& payload, const std::string& token,
             Deadline deadline);
  /// send() of a read or keep-alive, again on the next member after an unknown outcome while the
  /// deadline allows (gateway.cpp: repeatable()).
  Reply send_repeatable(std::string_view path, const std::string& payload, const std::string& token,
                        Deadline deadline);
  static constexpr Duration kMinTry = std::chrono::milliseconds(50);
  std::string auth_token(Deadline deadline, const std::string& rejected);

  GatewayConfig config_;
  http::Client http_;
  std::mutex mu_;
  std::string token_;  // v3 auth token (simple or JWT), refreshed when rejected
};

}  // namespace leader::etcd
