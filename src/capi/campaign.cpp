// Campaigns: leader::Campaign with C callbacks.

#include <chrono>
#include <vector>

#include "handles.hpp"

struct leader_campaign {
  leader_campaign_callbacks callbacks{};
  std::unique_ptr<leader::Campaign> campaign;
};

namespace {

using leader::capi::fail;
using Ms = std::chrono::milliseconds;

leader::CampaignCallbacks callbacks_of(const leader_campaign* handle) {
  const leader_campaign_callbacks& c = handle->callbacks;
  leader::CampaignCallbacks out;
  if (c.on_started_leading != nullptr)
    out.on_started_leading = [&c](leader::LeaderContext& ctx) {
      leader_context wrapped(ctx);  // valid during the call
      c.on_started_leading(&wrapped, c.user);
    };
  if (c.on_stopped_leading != nullptr)
    out.on_stopped_leading = [&c] { c.on_stopped_leading(c.user); };
  if (c.on_new_leader != nullptr)
    out.on_new_leader = [&c](const leader::LockState& now) {
      std::vector<leader_holder> holders;
      holders.reserve(now.holders.size());
      for (const leader::Holder& h : now.holders)
        holders.push_back({h.node_id.c_str(), h.fencing_token, h.slot,
                           std::chrono::duration_cast<Ms>(h.expires_in).count()});
      c.on_new_leader(holders.data(), holders.size(), c.user);
    };
  if (c.on_error != nullptr)
    out.on_error = [&c](const leader::BackendError& e) {
      c.on_error(leader::capi::status_of(e.code()), e.what(), c.user);
    };
  return out;
}

}  // namespace

extern "C" {

void leader_campaign_options_init(leader_campaign_options* options) {
  if (options == nullptr) return;
  const leader::CampaignOptions d;
  *options = leader_campaign_options{};
  options->struct_size = sizeof(leader_campaign_options);
  options->retry_ms = std::chrono::duration_cast<Ms>(d.retry_period).count();
  options->release_on_stop = d.release_on_cancel;
  options->resign_on_return = d.resign_on_return;
  options->resign_hold_off_ms = std::chrono::duration_cast<Ms>(d.resign_hold_off).count();
}

leader_status leader_campaign_start(leader_elector* elector, const char* lock,
                                    const leader_campaign_callbacks* callbacks,
                                    const leader_campaign_options* options, leader_campaign** out) {
  if (out == nullptr) return fail(LEADER_INVALID_ARGUMENT, "leader_campaign_start: out is NULL");
  *out = nullptr;
  if (elector == nullptr || lock == nullptr)
    return fail(LEADER_INVALID_ARGUMENT,
                "leader_campaign_start: elector and lock must not be NULL");
  if (callbacks != nullptr && callbacks->struct_size != sizeof(leader_campaign_callbacks))
    return fail(LEADER_INVALID_ARGUMENT,
                "leader_campaign_start: callbacks->struct_size is not "
                "sizeof(leader_campaign_callbacks)");
  if (options != nullptr && options->struct_size != sizeof(leader_campaign_options))
    return fail(
        LEADER_INVALID_ARGUMENT,
        "leader_campaign_start: options->struct_size is not sizeof(leader_campaign_options) "
        "(call leader_campaign_options_init)");
  leader_campaign_options o;
  leader_campaign_options_init(&o);
  if (options != nullptr) o = *options;
  return leader::capi::guarded([&] {
    auto handle = std::make_unique<leader_campaign>();
    if (callbacks != nullptr) handle->callbacks = *callbacks;
    const leader::CampaignOptions co{.retry_period = Ms(o.retry_ms),
                                     .release_on_cancel = o.release_on_stop,
                                     .resign_on_return = o.resign_on_return,
                                     .resign_hold_off = Ms(o.resign_hold_off_ms)};
    handle->campaign = std::visit(
        [&](const auto& e) {
          return std::make_unique<leader::Campaign>(e, lock, callbacks_of(handle.get()), co);
        },
        elector->elector);
    handle->campaign->start();
    *out = handle.release();
    return LEADER_OK;
  });
}

bool leader_campaign_resign(leader_campaign* campaign) {
  return campaign != nullptr && campaign->campaign->resign();
}

bool leader_campaign_is_leader(const leader_campaign* campaign) {
  return campaign != nullptr && campaign->campaign->is_leader();
}

leader_status leader_campaign_stop(leader_campaign* campaign) {
  if (campaign == nullptr) return LEADER_OK;
  const std::unique_ptr<leader_campaign> owned(campaign);
  return leader::capi::guarded([&] {
    campaign->campaign->stop();
    return LEADER_OK;
  });
}

}  // extern "C"
