#pragma once
// The Kubernetes API calls on coordination.k8s.io/v1 Lease objects (get, list, watch, create,
// replace, delete) over the shared HTTP transport, with bearer-token authentication and Status
// error classification.

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>

#include "cluster.hpp"
#include "http/client.hpp"

namespace leader::k8s {

/// One API reply: the HTTP status, the Status reason (for errors), the body, and when it came.
struct Reply {
  long status = 0;
  std::string reason;    ///< Status.reason of an error reply ("Conflict", "AlreadyExists" ...)
  nlohmann::json body;   ///< the object, list or Status
  TimePoint received{};  ///< steady time at which the reply was complete
  [[nodiscard]] bool ok() const { return status >= 200 && status < 300; }
  [[nodiscard]] bool not_found() const { return status == 404; }
  /// A 409 of either kind: a stale resourceVersion (Conflict) or a create race (AlreadyExists).
  [[nodiscard]] bool conflict() const { return status == 409; }
};

/// How a watch stream ended.
enum class WatchEnd {
  changed,  ///< an ADDED, MODIFIED or DELETED event came
  expired,  ///< 410 Gone (the resourceVersion is no longer kept) or another ERROR event
  ended,    ///< no event: the server ended the stream (timeoutSeconds), the deadline, a stop
};

/// The Lease API of one namespace. Thread-safe.
class Api {
 public:
  /// A client of `config`'s server; no I/O until the first call.
  explicit Api(ClusterConfig config);

  /// GET a Lease; 200 or 404 are replies, other failures throw BackendError.
  Reply get(const std::string& name, Deadline deadline);
  /// GET the Leases whose labels match `selector` (k=v).
  Reply list(const std::string& selector, Deadline deadline);
  /// A list-watch of the Leases that `selector` picks (label_selector(), name_selector()) from
  /// `resource_version` (a LIST's) on, streamed
  /// on a connection of its own with timeoutSeconds of the time left, until the first change
  /// event, an ERROR event / 410, the end of the stream, `deadline` or `stop`. BOOKMARK events
  /// are skipped. Other error replies throw BackendError as the other calls do.
  WatchEnd watch(const std::string& selector, const std::string& resource_version,
                 Deadline deadline, const std::stop_token& stop);
  /// POST a new Lease (201, or 409 AlreadyExists).
  Reply create(const nlohmann::json& object, Deadline deadline);
  /// PUT a Lease conditional on its metadata.resourceVersion (200, or 409 Conflict, or 404).
  Reply replace(const std::string& name, const nlohmann::json& object, Deadline deadline);
  /// DELETE a Lease (200, or 404).
  Reply remove(const std::string& name, Deadline deadline);

  /// The watch selector of the Leases labelled `k_eq_v` ("k=v"), for watch().
  [[nodiscard]] static std::string label_selector(const std::string& k_eq_v);
  /// The watch selector of the Lease named `name`, for watch().
  [[nodiscard]] static std::string name_selector(const std::string& name);

  /// The configuration this client was made with.
  [[nodiscard]] const ClusterConfig& config() const { return config_; }
  /// "<base url>/<namespace>", the key of this server's objects in process-wide tables.
  [[nodiscard]] const std::string& scope() const { return scope_; }

 private:
  Reply call(http::Method method, const std::string& target, const std::string& body,
             Deadline deadline);
  /// Reads the bearer token file again when it was read over a minute ago, or when `force`d.
  void refresh_token(bool force = false);

  ClusterConfig config_;
  std::string scope_;
  std::string path_;  // /apis/coordination.k8s.io/v1/namespaces/<ns>/leases
  std::unique_ptr<http::Client> client_;
  std::mutex token_mu_;
  TimePoint token_read_{};
  bool token_loaded_ = false;
};

}  // namespace leader::k8s
