#pragma once
/// @file serve_leases.hpp
/// The leases `leader serve` holds for its API clients: each is the engine's held lease, a
/// LeaseGuard from Elector::acquire (a LeaderElector, or a LeaderGroupElector for slots), and
/// this file keeps only what HTTP adds to it: the map from an opaque lease id to the guard, the
/// ttl the client last asked for, and the locks and slot counts to list.
///
/// The client renews: the guard has no auto_extend, and a renew request is the guard's
/// LeaderContext::extend(), so a client that stops renewing loses the lease at the engine's local
/// deadline (send time of the last confirmed acquire/renew + the ttl the store granted - safety
/// margin), which is also the deadline reported; the sidecar never claims more than was granted.
/// A lease whose context is no longer leader (lost, or its deadline passed) is not listed and is
/// dropped (renew then answers 409, 404 once dropped).
///
/// A lease id is a secret: only the acquire reply carries it. Listings show a lease by its node id,
/// fencing token and deadline, never by its id, and renew/release compare the id they are given
/// with the lease's in constant time.
/// Thread-safety: every method may be called from any HTTP worker thread.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "leader/events.hpp"
#include "leader/store.hpp"

namespace leader::cli {

/// An API error: HTTP status, a machine-readable code and a reason for humans.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string code, const std::string& reason)
      : std::runtime_error(reason), status_(status), code_(std::move(code)) {}
  [[nodiscard]] int status() const { return status_; }
  [[nodiscard]] const std::string& code() const { return code_; }

 private:
  int status_;
  std::string code_;
};

/// What a client asks for in POST /v1/locks/{name}/acquire.
struct AcquireRequest {
  std::string lock;
  Duration ttl{30'000};
  Duration wait{0};
  std::string node_id;
  int slots = 0;       ///< 0: single leader; N: one of N slots
  std::string client;  ///< the --clients-file client asking ("" without one)
};

struct ApiLease;

/// The API clients' leases by lease id.
class ClientLeases {
 public:
  ClientLeases(std::shared_ptr<LeaseStore> store, std::shared_ptr<EventBus> bus,
               std::string default_node_id);
  ~ClientLeases();
  ClientLeases(const ClientLeases&) = delete;
  ClientLeases& operator=(const ClientLeases&) = delete;

  /// Acquires (waiting up to request.wait); the lease as JSON, with its `lease_id` (the only reply
  /// that carries it). Throws ApiError: 409 held_elsewhere on contention, 400 for invalid options,
  /// 503 when the store fails.
  nlohmann::json acquire(const AcquireRequest& request, const std::stop_token& stop);
  /// A lease is bound to the client that acquired it: renew, release and get find it only for
  /// that client (404 for any other, as for a wrong id).
  /// Renews lease `id` of `lock` to `ttl` (0: its ttl so far). Throws ApiError 404 unknown lease,
  /// 409 lease_lost, 503 store failure.
  nlohmann::json renew(const std::string& lock, const std::string& id, const std::string& client,
                       Duration ttl);
  /// Releases lease `id` of `lock`. Throws ApiError 404 unknown lease, 503 when the store could
  /// not be reached (the lease is forgotten here all the same and expires on the store).
  nlohmann::json release(const std::string& lock, const std::string& id, const std::string& client);
  /// The lease with id `id` (any lock), without its id: for its own client only, since the id is
  /// the secret. Throws ApiError 404 unknown_lease for any id that is not a live lease here.
  nlohmann::json get(const std::string& id, const std::string& client);
  /// The leases held now, without their ids.
  nlohmann::json list();
  /// The leases held here for `lock`, without their ids (node id, fencing token, deadline).
  nlohmann::json held_for(const std::string& lock);
  /// Slots asked for `lock` by the latest acquire (0 when single or unknown).
  int slots_of(const std::string& lock);
  /// Locks acquired through the API so far (at most 1000 names kept).
  std::set<std::string> locks_seen();
  /// Releases every lease (shutdown); returns how many. The store's failures go to `failures`.
  std::size_t release_all(std::vector<std::string>* failures = nullptr);
  /// Drops leases that were lost or whose local deadline passed.
  void drop_expired();

 private:
  std::shared_ptr<ApiLease> find(const std::string& lock, const std::string& id,
                                 const std::string& client);
  void forget(const std::shared_ptr<ApiLease>& lease);  // caller holds mu_
  std::shared_ptr<LeaseStore> store_;
  std::shared_ptr<EventBus> bus_;
  std::string default_node_id_;
  std::mutex mu_;
  std::multimap<std::string, std::shared_ptr<ApiLease>> leases_;  ///< by lock name
  std::map<std::string, int> slots_;
  std::set<std::string> seen_;
};

/// Whether `given` equals `secret`, in a time that depends on the secret's length only.
bool same_secret(std::string_view given, std::string_view secret);

/// JSON of an error body: {"error": code, "reason": reason}.
nlohmann::json error_json(const std::string& code, const std::string& reason);

/// Converts library exceptions (InvalidArgument, BackendError) into ApiError; rethrows others.
[[noreturn]] void rethrow_as_api_error(const std::exception_ptr& error);

/// A steady-clock deadline as RFC 3339 UTC wall time (milliseconds).
std::string wall_time_of(TimePoint deadline);

}  // namespace leader::cli
