#pragma once
/// @file serve_campaign.hpp
/// Campaign mode of `leader serve` (--campaign LOCK): one thread per lock keeps running for its
/// leadership with a LeaderElector (auto_extend on) and holds it until the lease is lost or the
/// sidecar stops, then campaigns again. State and changes come from the elector's event bus
/// (LeadershipState: held, token, local deadline, version), so a long-poll can wait for the next
/// version. leader::Campaign (wt/campaign) was not merged when this was written; this loop uses
/// the elector directly.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "leader/elector.hpp"
#include "log.hpp"

namespace leader::cli {

/// Campaigns for a set of locks until destroyed (which releases what is held).
class CampaignLoops {
 public:
  /// Starts one campaign per lock in `locks` on `store` with lease time `ttl`; every acquisition
  /// ends as a record in each sink of `history`. `attach`, when given, subscribes more
  /// consumers (metrics) to the campaigns' event bus before the first election.
  CampaignLoops(std::shared_ptr<LeaseStore> store, const std::vector<std::string>& locks,
                Duration ttl, const std::string& node_id,
                const std::vector<std::shared_ptr<HistorySink>>& history, const Log& log,
                const std::function<std::vector<Subscription>(EventBus&)>& attach = {});
  ~CampaignLoops();
  CampaignLoops(const CampaignLoops&) = delete;
  CampaignLoops& operator=(const CampaignLoops&) = delete;

  /// True when `lock` is campaigned for here.
  [[nodiscard]] bool campaigns(const std::string& lock) const;
  /// The locks campaigned for.
  [[nodiscard]] const std::vector<std::string>& locks() const { return locks_; }
  /// This instance's leadership of `lock` as JSON (leader, fencing_token, expires_in_ms, version,
  /// last_error).
  [[nodiscard]] nlohmann::json state(const std::string& lock) const;
  /// Waits up to `wait` (or until `stop`) for the state of `lock` to pass `after_version`; then
  /// state(lock).
  [[nodiscard]] nlohmann::json wait_change(const std::string& lock, std::uint64_t after_version,
                                           Duration wait, const std::stop_token& stop) const;
  /// Stops campaigning and releases held leases (idempotent).
  void stop();

 private:
  void run(const std::string& lock, const std::stop_token& stop);
  std::vector<std::string> locks_;
  std::shared_ptr<EventBus> bus_;
  LeaderElector elector_;
  std::vector<Subscription> history_feeds_;
  Log log_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> last_error_;
  std::vector<std::jthread> threads_;
};

}  // namespace leader::cli
