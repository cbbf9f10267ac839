#pragma once
// The holders of a lock as JSON, one shape for every command that prints or serves them
// (`leader status --json`, `leader list --json`, `leader observe --json`, `leader serve`).

#include <nlohmann/json.hpp>

#include "leader/store.hpp"

namespace leader::cli {

/// [{"node_id", "owner", "fencing_token", "slot", "expires_in_ms"}, ...] in slot order.
inline nlohmann::json holders_json(const LockState& state) {
  nlohmann::json holders = nlohmann::json::array();
  for (const Holder& h : state.holders) {
    holders.push_back({{"node_id", h.node_id},
                       {"owner", h.owner},
                       {"fencing_token", h.fencing_token},
                       {"slot", h.slot},
                       {"expires_in_ms", h.expires_in.count()}});
  }
  return holders;
}

}  // namespace leader::cli
