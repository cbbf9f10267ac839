#include "etcd_store.hpp"

#include <algorithm>
#include <charconv>

#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "ops.hpp"

namespace leader::etcd {
namespace {

using Json = nlohmann::json;

TimePoint steady_now() { return std::chrono::steady_clock::now(); }

void validate_request(const LeaseRequest& request) {
  validate_lock_name(request.lock);
  if (request.ttl <= Duration{0})
    throw InvalidArgument("lease ttl " + std::to_string(request.ttl.count()) + "ms for lock '" +
                          request.lock + "' must be > 0");
  if (request.slots < 0)
    throw InvalidArgument("slots " + std::to_string(request.slots) + " for lock '" + request.lock +
                          "' must be >= 0");
}

// The first kv of a Range, DeleteRange (prev_kvs) or Put (prev_kv) response inside a Txn reply.
std::optional<KeyValue> first_kv(const Json& txn_reply, const char* response, const char* field) {
  auto rs = txn_reply.find("responses");
  if (rs == txn_reply.end() || !rs->is_array() || rs->empty()) return std::nullopt;
  const Json& r = (*rs)[0].value(response, Json::object());
  auto kv = r.find(field);
  if (kv == r.end()) return std::nullopt;
  if (kv->is_array()) {
    if (kv->empty()) return std::nullopt;
    return decode_kv((*kv)[0]);
  }
  return decode_kv(*kv);
}

}  // namespace

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
  Reply r = gateway_.post("/v3/lease/grant", req, deadline);
  if (!r.ok() && id != 0 && r.message.find("lease already exists") != std::string::npos) {
    // A retry with the same owner token after an unknown outcome: start from a clean lease.
    revoke_quietly(id, deadline);
    r = gateway_.post("/v3/lease/grant", req, deadline);
  }
  if (!r.ok()) gateway_.fail(r, "lease grant");
  return int_field(r.body, "ID");
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

std::vector<KeyValue> EtcdStore::list(const std::string& prefix, Deadline deadline) {
  Json r = gateway_.call("/v3/kv/range", ops::range_prefix(prefix), deadline);
  std::vector<KeyValue> out;
  if (auto kvs = r.find("kvs"); kvs != r.end() && kvs->is_array())
    for (const auto& kv : *kvs) out.push_back(decode_kv(kv));
  return out;
}

Acquired EtcdStore::try_acquire(const LeaseRequest& request, Deadline deadline) {
  validate_request(request);
  const std::int64_t lease_id = lease_id_for_owner(request.owner);
  return request.slots >= 1 ? acquire_group(request, lease_id, deadline)
                            : acquire_single(request, lease_id, deadline);
}

Acquired EtcdStore::acquire_single(const LeaseRequest& request, std::int64_t lease_id,
                                   Deadline deadline) {
  const TimePoint sent = steady_now();
  grant(lease_id, ttl_seconds(request.ttl.count()), deadline);
  const std::string prefix = lock_prefix(request.lock);
  const std::string key = prefix + lease_hex(lease_id);
  const Json value = {{"node_id", request.node_id}, {"owner", request.owner}};
  // Free means no key at all under the prefix: the lowest create revision (the holder) of
  // concurrency.Mutex exists whenever any contender key does.
  Json txn = ops::txn(Json::array({ops::create_revision_is(prefix, 0, prefix_end(prefix))}),
                      Json::array({{{"request_put", ops::put(key, value.dump(), lease_id)}}}));
  Json reply;
  try {
    reply = gateway_.call("/v3/kv/txn", txn, deadline);
  } catch (const BackendError&) {
    revoke_quietly(lease_id, deadline);
    throw;
  }
  if (!reply.value("succeeded", false)) {
    revoke_quietly(lease_id, deadline);
    return {};
  }
  Lease lease{request.lock, request.owner, request.node_id, 0, 0, 0, request.ttl, sent};
  lease.fencing_token = static_cast<std::uint64_t>(int_field(reply["header"], "revision"));
  return {std::move(lease)};
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
  if (!reply.value("succeeded", false)) {
    revoke_quietly(fresh, deadline);
    return false;
  }
  if (auto prev = first_kv(reply, "response_put", "prev_kv"); prev && prev->lease != fresh)
    revoke_quietly(prev->lease, deadline);
  return true;
}

LeaseStatus EtcdStore::renew(Lease& lease, Duration ttl, Deadline deadline) {
  const std::string key = holder_key(lease);
  auto kv = get(key, deadline);
  if (!kv || kv->create_revision != static_cast<std::int64_t>(lease.fencing_token) ||
      kv->lease == 0)
    return LeaseStatus::lost;
  const std::int64_t want = ttl_seconds(ttl.count());
  const TimePoint sent = steady_now();
  Json r = gateway_.call("/v3/lease/keepalive", {{"ID", std::to_string(kv->lease)}}, deadline);
  const std::int64_t granted = int_field(r, "TTL");
  if (granted <= 0) return LeaseStatus::lost;
  // A keep-alive restores the lease's granted TTL; a longer ttl needs a longer lease.
  if (granted < want && !move_key(key, kv->create_revision, want, deadline))
    return LeaseStatus::lost;
  lease.ttl = ttl;
  lease.sent_at = sent;
  return LeaseStatus::ok;
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
  if (!reply.value("succeeded", false)) return LeaseStatus::lost;
  auto prev = first_kv(reply, "response_delete_range", "prev_kvs");
  if (!prev) return LeaseStatus::lost;
  revoke_quietly(prev->lease, deadline);
  return LeaseStatus::ok;
}

}  // namespace leader::etcd
