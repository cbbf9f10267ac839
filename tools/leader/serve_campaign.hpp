#pragma once
/// @file serve_campaign.hpp
/// Campaign mode of `leader serve` (--campaign LOCK): one leader::Campaign per lock over one
/// LeaderElector (auto_extend on), each run on a thread of its own. The HTTP view of a lock
/// (GET /v1/leader/{name}) is read from the elector's event bus (LeadershipState: held, token,
/// local deadline, version), so a long-poll can wait for the next version.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "leader/campaign.hpp"
#include "leader/elector.hpp"
#include "log.hpp"

namespace leader::cli {

/// The sidecar's campaigns, one per lock, until destroyed (which releases what is held).
class Campaigns {
 public:
  /// Starts one campaign per lock in `locks` on `store` with lease time `ttl`; every acquisition
  /// ends as a record in each sink of `history`. `attach`, when given, subscribes more
  /// consumers (metrics) to the campaigns' event bus before the first election. Throws
  /// InvalidArgument for a ttl the elector or the campaign refuses.
  Campaigns(std::shared_ptr<LeaseStore> store, const std::vector<std::string>& locks, Duration ttl,
            const std::string& node_id, const std::vector<std::shared_ptr<HistorySink>>& history,
            const Log& log, const std::function<std::vector<Subscription>(EventBus&)>& attach = {});
  ~Campaigns();
  Campaigns(const Campaigns&) = delete;
  Campaigns& operator=(const Campaigns&) = delete;

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
  /// Ends the current term of `lock` (Campaign::resign: the lease is released and the campaign
  /// waits for the hold-off before campaigning again), answered once the term ended (at most
  /// 5 s): {"resigned", "lock", "fencing_token"}.
  /// Throws ApiError 409 not_leader when this instance does not lead `lock`.
  nlohmann::json resign(const std::string& lock);
  /// Stops campaigning and releases held leases (idempotent).
  void stop();

 private:
  [[nodiscard]] CampaignCallbacks callbacks(const std::string& lock);
  void note_error(const std::string& lock, const std::string& error);
  void keep_running(Campaign& campaign, const std::string& lock, const std::stop_token& stop);

  std::vector<std::string> locks_;
  std::shared_ptr<EventBus> bus_;
  LeaderElector elector_;
  std::vector<Subscription> feeds_;
  Log log_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::map<std::string, std::string> last_error_;  ///< guarded by mu_
  std::vector<std::unique_ptr<Campaign>> campaigns_;
  std::vector<std::jthread> threads_;  ///< declared last: joined before the campaigns go
};

}  // namespace leader::cli
