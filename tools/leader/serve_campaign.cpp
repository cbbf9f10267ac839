#include "serve_campaign.hpp"

#include <algorithm>
#include <condition_variable>
#include <optional>

#include "leader/errors.hpp"
#include "leader/history.hpp"
#include "serve_leases.hpp"

namespace leader::cli {
namespace {

ElectionOptions campaign_options(Duration ttl, const std::string& node_id) {
  ElectionOptions o;
  o.lease_time = ttl;
  o.wait_time = ttl;  // one acquire call retries (jittered backoff) for about a lease time
  o.auto_extend = true;
  if (!node_id.empty()) o.node_id = node_id;
  return o;
}

ElectorHooks campaign_hooks(const std::shared_ptr<EventBus>& bus) {
  ElectorHooks hooks;
  hooks.events = bus;
  return hooks;
}

// Sleeps `d` unless `stop` fires first.
void pause_for(Duration d, const std::stop_token& stop) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait_for(lock, stop, d, [] { return false; });
}

}  // namespace

Campaigns::Campaigns(std::shared_ptr<LeaseStore> store, const std::vector<std::string>& locks,
                     Duration ttl, const std::string& node_id,
                     const std::vector<std::shared_ptr<HistorySink>>& history, const Log& log,
                     const std::function<std::vector<Subscription>(EventBus&)>& attach)
    : locks_(locks),
      bus_(std::make_shared<EventBus>()),
      elector_(std::move(store), campaign_options(ttl, node_id), campaign_hooks(bus_)),
      log_(log) {
  CampaignOptions options;
  options.retry_period = ttl / 3;  // after contention or a store failure
  for (const auto& lock : locks_)
    campaigns_.push_back(std::make_unique<Campaign>(elector_, lock, callbacks(lock), options));
  for (const auto& sink : history) feeds_.push_back(attach_history(*bus_, sink));
  if (attach)
    for (auto& feed : attach(*bus_)) feeds_.push_back(std::move(feed));
  for (std::size_t i = 0; i < locks_.size(); ++i) {
    threads_.emplace_back(
        [this, i](const std::stop_token& stop) { keep_running(*campaigns_[i], locks_[i], stop); });
  }
}

Campaigns::~Campaigns() { stop(); }

void Campaigns::stop() {
  stopping_ = true;
  for (auto& t : threads_) t.request_stop();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

bool Campaigns::campaigns(const std::string& lock) const {
  return std::find(locks_.begin(), locks_.end(), lock) != locks_.end();
}

CampaignCallbacks Campaigns::callbacks(const std::string& lock) {
  CampaignCallbacks c;
  c.on_started_leading = [this, lock](LeaderContext& ctx) {
    log_.notice("campaign '" + lock + "': leading with fencing token " +
                    std::to_string(ctx.fencing_token()),
                {lock, ctx.node_id(), ctx.fencing_token(), "acquired"});
    std::lock_guard guard(mu_);
    last_error_.erase(lock);
  };
  c.on_stopped_leading = [this, lock] {
    if (!stopping_)
      log_.error("campaign '" + lock +
                     "': lost the lease (renewal failed or deadline passed); campaigning again",
                 {.lock = lock, .event = "lost"});
  };
  c.on_error = [this, lock](const BackendError& e) { note_error(lock, e.what()); };
  return c;
}

void Campaigns::note_error(const std::string& lock, const std::string& error) {
  {
    std::lock_guard guard(mu_);
    last_error_[lock] = error;
  }
  log_.error("campaign '" + lock + "': " + error, {.lock = lock, .event = "store_error"});
}

void Campaigns::keep_running(Campaign& campaign, const std::string& lock,
                             const std::stop_token& stop) {
  // The campaign retries contention and retryable store failures itself; any other error ends
  // its run. A sidecar has no caller to hand that error to: it reports it (last_error) and
  // campaigns again after the retry period.
  while (!stop.stop_requested()) {
    try {
      campaign.run(stop);
      return;
    } catch (const std::exception& e) {
      note_error(lock, e.what());
    }
    pause_for(elector_.options().lease_time / 3, stop);
  }
}

nlohmann::json Campaigns::state(const std::string& lock) const {
  LeadershipState s = elector_.leadership(lock);
  bool leads = s.held && s.deadline > std::chrono::steady_clock::now();
  nlohmann::json out = {{"lock", lock},
                        {"leader", leads},
                        {"node_id", elector_.options().node_id},
                        {"version", s.version}};
  if (leads) {
    out["fencing_token"] = s.fencing_token;
    out["expires_in_ms"] = std::max<std::int64_t>(
        0, std::chrono::duration_cast<Duration>(s.deadline - std::chrono::steady_clock::now())
               .count());
    out["deadline"] = wall_time_of(s.deadline);
  }
  std::lock_guard guard(mu_);
  auto it = last_error_.find(lock);
  if (it != last_error_.end()) out["last_error"] = it->second;
  return out;
}

nlohmann::json Campaigns::resign(const std::string& lock) {
  auto it = std::find(locks_.begin(), locks_.end(), lock);
  Campaign& campaign = *campaigns_.at(static_cast<std::size_t>(it - locks_.begin()));
  std::optional<LeaseInfo> term = campaign.term();
  if (!term || !campaign.resign())
    throw ApiError(409, "not_leader", "this sidecar does not lead '" + lock + "' now");
  // The term ends on the campaign's thread: the reply waits (briefly) for the state to show it.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (nlohmann::json s = state(lock); s["leader"].get<bool>();) {
    auto left = std::chrono::duration_cast<Duration>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    s = wait_change(lock, s["version"].get<std::uint64_t>(), left, std::stop_token{});
  }
  return {{"resigned", true}, {"lock", lock}, {"fencing_token", term->fencing_token}};
}

nlohmann::json Campaigns::wait_change(const std::string& lock, std::uint64_t after_version,
                                      Duration wait, const std::stop_token& stop) const {
  struct Waiter {
    std::mutex m;
    std::condition_variable_any cv;
    bool fired = false;
  };
  auto w = std::make_shared<Waiter>();
  std::uint64_t id = bus_->notify_state_change(lock, after_version, [w](const LeadershipState&) {
    {
      std::lock_guard guard(w->m);
      w->fired = true;
    }
    w->cv.notify_all();
  });
  {
    std::unique_lock guard(w->m);
    w->cv.wait_for(guard, stop, wait, [&] { return w->fired; });
  }
  bus_->cancel_state_notification(id);  // a notification firing now only touches *w (shared)
  return state(lock);
}

}  // namespace leader::cli
