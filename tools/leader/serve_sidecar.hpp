#pragma once
/// @file serve_sidecar.hpp
/// The sidecar of `leader serve`: its store, the leases it holds for API clients, its campaigns,
/// its history, and the HTTP routes over them. The route table and the read-only views are in
/// serve_sidecar.cpp, the handlers that acquire, renew and release in serve_lease_handlers.cpp.
/// Thread-safety: the handlers run on any HTTP worker thread; shut_down() runs once, after the
/// HTTP server stopped.

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>
#include <vector>

#include "leader/events.hpp"
#include "leader/history.hpp"
#include "leader/store.hpp"
#ifdef LEADER_HAVE_METRICS
#include "leader/metrics.hpp"
#include "serve_metrics.hpp"
#endif
#include "log.hpp"
#include "serve_campaign.hpp"
#include "serve_http.hpp"
#include "serve_leases.hpp"
#include "serve_options.hpp"

namespace leader::cli {

/// The sidecar: its store, leases, campaigns and HTTP routes.
class Sidecar {
 public:
  /// Checks the options that concern it (durations, lock names, --history) and starts the
  /// campaigns. Throws UsageError, or StoreUnavailable when the history sink cannot be opened.
  Sidecar(const ServeOptions& o, std::shared_ptr<LeaseStore> store, std::string store_shown,
          const Log& log);

  /// Adds every route (and their guards, with bearer `token` when not empty) to `svr`.
  void routes(httplib::Server& svr, const Credentials& credentials);
  /// Ends acquire waits and long-polls, so that the HTTP worker pool can drain.
  void stop_waits() { stopping_.request_stop(); }
  /// Stops campaigns and releases every lease (after the HTTP server stopped).
  void shut_down();
  /// Drops expired API leases every second until `stop`.
  void reap(const std::stop_token& stop);

 private:
  void start_campaigns(Duration ttl);
  std::shared_ptr<LeaseStore> instrumented(std::shared_ptr<LeaseStore> store);

  // Read-only views (serve_sidecar.cpp).
  void ready(httplib::Response& res);
  nlohmann::json lock_json(const std::string& lock);
  nlohmann::json all_locks();
  nlohmann::json history_json();
  void own_lease(const httplib::Request& req, httplib::Response& res);
  void watch(const httplib::Request& req, httplib::Response& res);

  // The lease API and campaign long-polls (serve_lease_handlers.cpp).
  void acquire(const httplib::Request& req, httplib::Response& res);
  void renew(const httplib::Request& req, httplib::Response& res);
  void release(const httplib::Request& req, httplib::Response& res);
  void leader(const httplib::Request& req, httplib::Response& res);
  void resign(const httplib::Request& req, httplib::Response& res);
  [[nodiscard]] std::string campaigned_lock(const std::string& name) const;
  [[nodiscard]] AcquireRequest acquire_request(const httplib::Request& req) const;
  nlohmann::json acquire_waiting(const httplib::Request& req, const AcquireRequest& r);
  void send_lease(httplib::Response& res, const nlohmann::json& lease);
  void release_unreceived(const nlohmann::json& lease, const std::string& client) noexcept;
  [[nodiscard]] Duration capped_ttl(Duration ttl) const;
  [[nodiscard]] int wait_limit() const { return std::max(1, o_.threads - 2); }

#ifdef LEADER_HAVE_METRICS
  metrics::Metrics metrics_;  // declared first: store_ is instrumented by it
  ServeMetrics serve_metrics_{*metrics_.registry(), LEADER_VERSION};
#endif
  const ServeOptions& o_;
  Log log_;
  std::shared_ptr<LeaseStore> observed_store_;  ///< the store itself: a LockWatcher is watched
  std::shared_ptr<LeaseStore> store_;
  std::string store_shown_;
  std::string node_id_;
  Duration ready_timeout_, max_wait_, max_ttl_;
  std::shared_ptr<EventBus> bus_;
  std::shared_ptr<MemoryHistory> memory_history_;
  std::shared_ptr<HistorySink> history_;
  std::vector<Subscription> feeds_;
  ClientLeases leases_;
  std::unique_ptr<Campaigns> campaigns_;
  std::stop_source stopping_;
  std::atomic<int> waits_{0};  ///< long-polls and acquires with a wait under way
};

}  // namespace leader::cli
