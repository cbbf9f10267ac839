// Group leases (N slots) and inspect(): both read the layout under `<prefix>/<lock>/`.

#include <algorithm>
#include <charconv>

#include "etcd_store.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "ops.hpp"

namespace leader::etcd {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kSlotPrefix = "slot-";

// One level per slot: take slot i if free, else try the next level. Every level also requires
// that no concurrency.Mutex key (hex lease ids, all sorting below "g") holds the lock.
Json claim_lowest_free(const std::string& prefix, int first, int last, const std::string& value,
                       std::int64_t lease_id) {
  const Json no_mutex_holder = ops::create_revision_is(prefix, 0, prefix + "g");
  Json level;
  for (int i = last - 1; i >= first; --i) {
    const std::string key = prefix + slot_name(i);
    Json failure = Json::array();
    if (!level.is_null()) failure.push_back({{"request_txn", std::move(level)}});
    level = ops::txn(Json::array({no_mutex_holder, ops::create_revision_is(key, 0)}),
                     Json::array({{{"request_put", ops::put(key, value, lease_id)}}}),
                     std::move(failure));
  }
  return level;
}

// The slot the nested Txn claimed, or -1 when every level failed.
int claimed_slot(const Json& reply, int first) {
  const Json* node = &reply;
  for (int slot = first;; ++slot) {
    if (node->value("succeeded", false)) return slot;
    auto rs = node->find("responses");
    if (rs == node->end() || !rs->is_array() || rs->empty()) return -1;
    auto inner = (*rs)[0].find("response_txn");
    if (inner == (*rs)[0].end()) return -1;
    node = &*inner;
  }
}

std::optional<int> slot_of(std::string_view name) {
  if (name.substr(0, kSlotPrefix.size()) != kSlotPrefix) return std::nullopt;
  name.remove_prefix(kSlotPrefix.size());
  int slot = -1;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), slot);
  if (ec != std::errc() || p != name.data() + name.size() || slot < 0) return std::nullopt;
  return slot;
}

}  // namespace

Acquired EtcdStore::acquire_group(const LeaseRequest& request, std::int64_t lease_id,
                                  Deadline deadline) {
  const TimePoint sent = std::chrono::steady_clock::now();
  grant(lease_id, ttl_seconds(request.ttl.count()), deadline);
  const std::string prefix = lock_prefix(request.lock);
  const std::string value =
      Json{{"node_id", request.node_id}, {"owner", request.owner}, {"slots", request.slots}}.dump();
  try {
    for (int first = 0; first < request.slots; first += kSlotsPerTxn) {
      const int last = std::min(request.slots, first + kSlotsPerTxn);
      Json reply = gateway_.call("/v3/kv/txn",
                                 claim_lowest_free(prefix, first, last, value, lease_id), deadline);
      const int slot = claimed_slot(reply, first);
      if (slot < 0) continue;
      Lease lease{request.lock, request.owner, request.node_id, 0,
                  slot,         request.slots, request.ttl,     sent};
      lease.fencing_token = static_cast<std::uint64_t>(int_field(reply["header"], "revision"));
      return {std::move(lease)};
    }
  } catch (const BackendError&) {
    revoke_quietly(lease_id, deadline);
    throw;
  }
  revoke_quietly(lease_id, deadline);
  return {};
}

LockState EtcdStore::inspect(std::string_view lock, Deadline deadline) {
  validate_lock_name(lock);
  LockState state{std::string(lock), {}};
  const std::string prefix = lock_prefix(lock);
  const std::vector<KeyValue> kvs = list(prefix, deadline);  // by create revision
  const bool group = std::any_of(kvs.begin(), kvs.end(), [&](const KeyValue& kv) {
    return slot_of(std::string_view(kv.key).substr(prefix.size())).has_value();
  });
  for (const KeyValue& kv : kvs) {
    const std::string name = kv.key.substr(prefix.size());
    auto slot = slot_of(name);
    if (group && !slot) continue;
    Holder h;
    h.slot = slot.value_or(0);
    h.fencing_token = static_cast<std::uint64_t>(kv.create_revision);
    Json v = Json::parse(kv.value, nullptr, /*allow_exceptions=*/false);
    h.node_id = v.is_object() ? v.value("node_id", "") : "";
    h.owner = v.is_object() ? v.value("owner", name) : name;  // etcdctl lock writes no value
    if (kv.lease != 0) {
      Json ttl =
          gateway_.call("/v3/lease/timetolive", {{"ID", std::to_string(kv.lease)}}, deadline);
      const std::int64_t left = int_field(ttl, "TTL");
      if (left < 0) continue;  // expired, being revoked
      // etcd reports whole seconds, truncated: this is the upper bound of the time left.
      h.expires_in = std::chrono::seconds(left + 1);
    }
    state.holders.push_back(std::move(h));
    if (!group) break;  // concurrency.Mutex: the lowest create revision holds, the rest wait
  }
  std::sort(state.holders.begin(), state.holders.end(),
            [](const Holder& a, const Holder& b) { return a.slot < b.slot; });
  return state;
}

}  // namespace leader::etcd
