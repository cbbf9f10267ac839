#include "etcd_store.hpp"

#include <algorithm>
#include <charconv>

#include "leader/detail/group_size.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "ops.hpp"
#include "replies.hpp"

namespace leader::etcd {
namespace {

using Json = nlohmann::json;

TimePoint steady_now() { return std::chrono::steady_clock::now(); }

}  // namespace

// The first kv of a Range, DeleteRange (prev_kvs) or Put (prev_kv) response inside a Txn reply.
std::optional<KeyValue> first_kv(const Json& txn_reply, const char* response, const char* field) {
  auto rs = txn_reply.find("responses");
  if (rs == txn_reply.end() || !rs->is_array() || rs->empty()) return std::nullopt;
  if (!(*rs)[0].is_object()) return std::nullopt;
  const Json& r = (*rs)[0].value(response, Json::object());
  auto kv = r.find(field);
  if (kv == r.end()) return std::nullopt;
  if (kv->is_array()) {
    if (kv->empty()) return std::nullopt;
    return decode_kv((*kv)[0]);
  }
  return decode_kv(*kv);
}

bool txn_succeeded(const Json& reply) {
  auto it = reply.find("succeeded");
  return it != reply.end() && it->is_boolean() && it->get<bool>();
}

KeyValue decode_kv(const Json& kv) {
  KeyValue out;
  out.key = bytes_field(kv, "key");
  out.value = bytes_field(kv, "value");
  out.create_revision = int_field(kv, "create_revision");
  out.mod_revision = int_field(kv, "mod_revision");
  out.lease = int_field(kv, "lease");
  return out;
}

std::string slot_name(int slot) { return "slot-" + std::to_string(slot); }

std::optional<int> slot_of(std::string_view name) {
  constexpr std::string_view kSlotPrefix = "slot-";
  if (!name.starts_with(kSlotPrefix)) return std::nullopt;
  name.remove_prefix(kSlotPrefix.size());
  int slot = -1;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), slot);
  if (ec != std::errc() || p != name.data() + name.size() || slot < 0) return std::nullopt;
  return slot;
}

std::string owner_of(const KeyValue& kv) {
  Json v = Json::parse(kv.value, nullptr, /*allow_exceptions=*/false);
  auto owner = v.is_object() ? v.find("owner") : v.end();
  return owner != v.end() && owner->is_string() ? owner->get<std::string>() : "";
}

EtcdStore::EtcdStore(Config config) : gateway_(std::move(config)), scheme_("etcd") {}

std::string EtcdStore::lock_prefix(std::string_view lock) const {
  return gateway_.config().prefix + "/" + std::string(lock) + "/";
}

std::string EtcdStore::holder_key(const Lease& lease) const {
  if (lease.slots >= 1) return lock_prefix(lease.lock) + slot_name(lease.slot);
  return lock_prefix(lease.lock) + lease_hex(lease_id_for_owner(lease.owner));
}

std::int64_t EtcdStore::grant(std::int64_t id, std::int64_t ttl_s, Deadline deadline) {
  Json req = {{"TTL", std::to_string(ttl_s)}};
  if (id != 0) req["ID"] = std::to_string(id);
  Json r = gateway_.call("/v3/lease/grant", req, deadline);
  if (const std::int64_t got = int_field(r, "TTL"); got > ttl_s) {
    std::int64_t seen = min_ttl_.load();
    while (got > seen && !min_ttl_.compare_exchange_weak(seen, got)) {
    }
  }
  return int_field(r, "ID");
}

bool EtcdStore::grant_own(std::int64_t id, std::int64_t ttl_s, Deadline deadline) {
  Reply r = gateway_.post("/v3/lease/grant",
                          {{"ID", std::to_string(id)}, {"TTL", std::to_string(ttl_s)}}, deadline);
  if (r.ok()) return true;
  if (r.message.find("lease already exists") != std::string::npos) return false;
  gateway_.fail(r, "lease grant");
}

void EtcdStore::revoke_quietly(std::int64_t id, Deadline deadline) noexcept {
  if (id == 0 || deadline.expired()) return;
  try {
    (void)gateway_.post("/v3/lease/revoke", {{"ID", std::to_string(id)}}, deadline);
  } catch (...) {  // the lease then expires on the server after its ttl
  }
}

std::optional<KeyValue> EtcdStore::get(const std::string& key, Deadline deadline) {
  Json r = gateway_.call("/v3/kv/range", ops::range_key(key), deadline);
  auto kvs = r.find("kvs");
  if (kvs == r.end() || !kvs->is_array() || kvs->empty()) return std::nullopt;
  return decode_kv((*kvs)[0]);
}

std::vector<KeyValue> EtcdStore::list(const std::string& prefix, Deadline deadline,
                                      std::int64_t* revision) {
  Json r = gateway_.call("/v3/kv/range", ops::range_prefix(prefix), deadline);
  if (revision != nullptr) {
    auto header = r.find("header");
    *revision = header != r.end() && header->is_object() ? int_field(*header, "revision") : 0;
  }
  std::vector<KeyValue> out;
  if (auto kvs = r.find("kvs"); kvs != r.end() && kvs->is_array())
    for (const auto& kv : *kvs) out.push_back(decode_kv(kv));
  return out;
}

std::string EtcdStore::slots_key(std::string_view lock) const {
  return gateway_.config().prefix + "/" + std::string(lock);  // outside the Mutex prefix
}

Acquired EtcdStore::try_acquire(const LeaseRequest& request, Deadline deadline) {
  const std::int64_t lease_id = lease_id_for_owner(request.owner);
  const std::int64_t ttl_s = ttl_seconds(request.ttl.count());
  const TimePoint sent = steady_now();
  if (!grant_own(lease_id, ttl_s, deadline)) {
    // This owner's lease exists: a retry after an unknown outcome, or a repeated call.
    if (auto mine = attached(request, lease_id, deadline)) return {std::move(mine)};
    revoke_quietly(lease_id, deadline);  // it holds nothing of this lock: start from a clean one
    if (!grant_own(lease_id, ttl_s, deadline))
      throw BackendError(ErrorCode::internal, "etcd",
                         "lease " + lease_hex(lease_id) + " still exists after its revoke");
  }
  Claim claim;
  try {
    claim = request.slots >= 1 ? claim_group(request, lease_id, sent, deadline)
                               : claim_single(request, lease_id, sent, deadline);
  } catch (const BackendError&) {
    revoke_quietly(lease_id, deadline);
    throw;
  }
  if (claim.lease) return {std::move(claim.lease)};
  revoke_quietly(lease_id, deadline);
  for (const KeyValue& kv : claim.seen.keys)  // ours, moved to another lease by a longer renew
    if (owner_of(kv) == request.owner)
      if (auto mine = adopt(request, kv, deadline)) return {std::move(mine)};
  refuse_other_shape(request, claim.seen);
  return {};
}

// The key this owner's lease carries under the lock, refreshed to the requested ttl.
std::optional<Lease> EtcdStore::attached(const LeaseRequest& request, std::int64_t lease_id,
                                         Deadline deadline) {
  Json r = gateway_.call("/v3/lease/timetolive", {{"ID", std::to_string(lease_id)}, {"keys", true}},
                         deadline);
  if (int_field(r, "TTL") < 0) return std::nullopt;  // -1: gone; 0: less than a second left
  const std::string prefix = lock_prefix(request.lock);
  auto keys = r.find("keys");
  if (keys == r.end() || !keys->is_array()) return std::nullopt;
  for (const auto& k : *keys) {
    const std::string key = k.is_string() ? base64_decode(k.get<std::string>()) : "";
    if (!key.starts_with(prefix)) continue;
    if (auto kv = get(key, deadline); kv && owner_of(*kv) == request.owner)
      return adopt(request, *kv, deadline);
  }
  return std::nullopt;
}

// `kv` is this owner's holder key: the same token and slot, its server expiry reset by a renew.
std::optional<Lease> EtcdStore::adopt(const LeaseRequest& request, const KeyValue& kv,
                                      Deadline deadline) {
  const auto slot = slot_of(std::string_view(kv.key).substr(lock_prefix(request.lock).size()));
  if (request.slots >= 1 ? !slot || *slot >= request.slots : slot.has_value())
    return std::nullopt;  // held in another shape: the shape check reports it
  Lease lease{request.lock,     request.owner,
              request.node_id,  static_cast<std::uint64_t>(kv.create_revision),
              slot.value_or(0), request.slots,
              request.ttl,      steady_now()};
  if (renew(lease, request.ttl, deadline).status != LeaseStatus::ok) return std::nullopt;
  return lease;
}

// Free means no key at all under the prefix: the lowest create revision (the holder) of
// concurrency.Mutex exists whenever any contender key does. The failure branch reads the holder.
EtcdStore::Claim EtcdStore::claim_single(const LeaseRequest& request, std::int64_t lease_id,
                                         TimePoint sent, Deadline deadline) {
  const std::string prefix = lock_prefix(request.lock);
  const std::string key = prefix + lease_hex(lease_id);
  const Json value = {{"node_id", request.node_id}, {"owner", request.owner}};
  Json txn = ops::txn(Json::array({ops::create_revision_is(prefix, 0, prefix_end(prefix))}),
                      Json::array({{{"request_put", ops::put(key, value.dump(), lease_id)}}}),
                      Json::array({{{"request_range", ops::range_prefix(prefix, 1)}}}));
  Json reply = gateway_.call("/v3/kv/txn", txn, deadline);
  Claim claim;
  if (txn_succeeded(reply)) {
    claim.lease = Lease{request.lock, request.owner, request.node_id, 0, 0, 0, request.ttl, sent};
    claim.lease->fencing_token = static_cast<std::uint64_t>(int_field(reply["header"], "revision"));
  } else if (auto holder = first_kv(reply, "response_range", "kvs")) {
    claim.seen.keys.push_back(std::move(*holder));
  }
  return claim;
}

void EtcdStore::refuse_other_shape(const LeaseRequest& request, const Snapshot& seen) const {
  if (seen.keys.empty()) return;
  const KeyValue& holder = seen.keys.front();  // the lowest create revision holds
  const auto slot = slot_of(std::string_view(holder.key).substr(lock_prefix(request.lock).size()));
  int held = 0;
  if (slot) {
    Json v = Json::parse(holder.value, nullptr, /*allow_exceptions=*/false);
    auto n = v.is_object() ? v.find("slots") : v.end();
    const int recorded = n != v.end() && n->is_number_integer() ? n->get<int>() : 0;
    held = seen.slots.value_or(recorded >= 1 ? recorded : std::max(request.slots, 1));
  }
  if (held == request.slots) return;
  throw detail::group_size_mismatch("etcd", request.lock, held, request.slots);
}

bool EtcdStore::move_key(const std::string& key, std::int64_t create_revision, std::int64_t ttl_s,
                         Deadline deadline) {
  const std::int64_t fresh = grant(0, ttl_s, deadline);
  Json txn = ops::txn(Json::array({ops::create_revision_is(key, create_revision)}),
                      Json::array({{{"request_put", ops::move_to_lease(key, fresh)}}}));
  Json reply;
  try {
    reply = gateway_.call("/v3/kv/txn", txn, deadline);
  } catch (const BackendError&) {
    revoke_quietly(fresh, deadline);
    throw;
  }
  if (!txn_succeeded(reply)) {
    revoke_quietly(fresh, deadline);
    return false;
  }
  if (auto prev = first_kv(reply, "response_put", "prev_kv"); prev && prev->lease != fresh)
    revoke_quietly(prev->lease, deadline);
  return true;
}

Renewal EtcdStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  const std::string key = holder_key(lease);
  auto kv = get(key, deadline);
  if (!kv || kv->create_revision != static_cast<std::int64_t>(lease.fencing_token) ||
      kv->lease == 0)
    return {};
  const std::int64_t want = ttl_seconds(ttl.count());
  Json r = gateway_.call("/v3/lease/keepalive", {{"ID", std::to_string(kv->lease)}}, deadline);
  const std::int64_t granted = int_field(r, "TTL");
  if (granted <= 0) return {};
  // A keep-alive restores the lease's granted TTL, whatever ttl is asked now: a longer ttl needs
  // a longer lease, and a shorter one a shorter lease (issue 13: the key stayed on the longer
  // lease, so the server held it up to the old TTL while the holder believed the new one; safe
  // for exclusion, but a takeover after the holder's end waited for the old TTL). A fresh lease
  // is granted after this call was sent, so its expiry is at least sent + want seconds; want is
  // the ttl rounded up to whole seconds, and a server's minimum TTL can raise it further: the
  // server may still hold the key up to that rounding longer than the ttl reported (README.md).
  const bool shorter = granted > std::max(want, min_ttl_.load());
  if ((granted < want || shorter) && !move_key(key, kv->create_revision, want, deadline)) return {};
  return {LeaseStatus::ok, ttl};
}

LeaseStatus EtcdStore::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  const std::string key = holder_key(lease);
  const auto token = static_cast<std::int64_t>(lease.fencing_token);
  if (keep_for > Duration{0})
    return move_key(key, token, ttl_seconds(keep_for.count()), deadline) ? LeaseStatus::ok
                                                                         : LeaseStatus::lost;
  // Revoking the acquisition's own lease deletes its key in the same raft entry.
  const std::int64_t own = lease_id_for_owner(lease.owner);
  Reply r = gateway_.post("/v3/lease/revoke", {{"ID", std::to_string(own)}}, deadline);
  if (r.ok()) return LeaseStatus::ok;
  if (r.code != kNotFound) gateway_.fail(r, "lease revoke");
  // The key may have moved to another lease (a longer renew): delete it only if still ours.
  Json txn = ops::txn(Json::array({ops::create_revision_is(key, token)}),
                      Json::array({{{"request_delete_range", ops::delete_key(key)}}}));
  Json reply = gateway_.call("/v3/kv/txn", txn, deadline);
  if (!txn_succeeded(reply)) return LeaseStatus::lost;
  auto prev = first_kv(reply, "response_delete_range", "prev_kvs");
  if (!prev) return LeaseStatus::lost;
  revoke_quietly(prev->lease, deadline);
  return LeaseStatus::ok;
}

}  // namespace leader::etcd
