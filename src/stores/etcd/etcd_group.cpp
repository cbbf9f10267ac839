// Group leases (N slots) and inspect(): both read the layout under `<prefix>/<lock>/`.

#include <algorithm>
#include <set>
#include <variant>

#include "clients/etcd/codec.hpp"
#include "clients/etcd/ops.hpp"
#include "etcd_store.hpp"
#include "http/json.hpp"
#include "leader/detail/watch_reads.hpp"
#include "leader/errors.hpp"
#include "leader/lock_watching.hpp"
#include "leader/names.hpp"

namespace leader::etcd {
namespace {

using Json = nlohmann::json;

// One level per slot: take slot i if free, else try the next level. Every level also requires
// that no concurrency.Mutex key (hex lease ids, all sorting below "g") holds the lock and that the
// lock is recorded as a group of this size. The last level's failure branch reads the lock's
// keys and its recorded size, so a refusal is judged on the same snapshot as the compares.
Json claim_lowest_free(const std::string& prefix, int first, int last, const std::string& value,
                       std::int64_t lease_id, const std::string& slots_key, int slots) {
  const Json no_mutex_holder = ops::create_revision_is(prefix, 0, prefix + "g");
  const Json same_size = ops::value_is(slots_key, std::to_string(slots));
  const Json reads = Json::array({{{"request_range", ops::range_prefix(prefix)}},
                                  {{"request_range", ops::range_key(slots_key)}}});
  // Slot i's level: claim it if missing, else run `failure` (the next level, or the reads).
  const auto claim = [&](int i, Json failure) {
    const std::string key = prefix + slot_name(i);
    return ops::txn(Json::array({no_mutex_holder, same_size, ops::create_revision_is(key, 0)}),
                    Json::array({{{"request_put", ops::put(key, value, lease_id)}}}),
                    std::move(failure));
  };
  // Built from the innermost level (slot last - 1; callers pass first < last) outwards.
  Json level = claim(last - 1, reads);
  for (int i = last - 2; i >= first; --i)
    level = claim(i, Json::array({{{"request_txn", std::move(level)}}}));
  // No key of this owner's under the prefix (its value names the owner): a retry whose first
  // attempt landed must find its slot, not take a second one. The range is not empty here.
  level = ops::txn(Json::array({ops::no_value_is(prefix, value, prefix_end(prefix))}),
                   Json::array({{{"request_txn", std::move(level)}}}), reads);
  // No key at all under the prefix: nobody holds the lock, so this request's size applies.
  return ops::txn(
      Json::array({ops::create_revision_is(prefix, 0, prefix_end(prefix))}),
      Json::array({{{"request_put", ops::put(slots_key, std::to_string(slots), 0)}},
                   {{"request_put", ops::put(prefix + slot_name(0), value, lease_id)}}}),
      Json::array({{{"request_txn", std::move(level)}}}));
}

}  // namespace

// The group size recorded for the lock, from the Range of its slots key.
std::optional<int> recorded_slots(const std::vector<KeyValue>& kvs) {
  const auto n = kvs.empty() ? std::nullopt : http::whole_number<int>(kvs.front().value);
  if (!n || *n < 1) return std::nullopt;
  return n;
}

void read_holder_value(const std::string& value, const std::string& name, Holder& h) {
  const Json v = Json::parse(value, nullptr, /*allow_exceptions=*/false);
  h.node_id = http::field<std::string>(v, "node_id").value_or("");
  h.owner = http::field<std::string>(v, "owner").value_or(name);  // etcdctl lock writes no value
}

std::optional<EtcdStore::Claim> EtcdStore::claim_group(const LeaseRequest& request,
                                                       std::int64_t lease_id, TimePoint sent,
                                                       Deadline deadline) {
  const std::string prefix = lock_prefix(request.lock);
  const std::string value =
      Json{{"node_id", request.node_id}, {"owner", request.owner}, {"slots", request.slots}}.dump();
  Claim claim;
  const auto claimed = [&](int slot, const Json& reply) {
    claim.lease =
        granted(request, int_field(reply.value("header", Json()), "revision"), slot, sent);
  };
  for (int first = 0; first < request.slots; first += kSlotsPerTxn) {
    const int last = std::min(request.slots, first + kSlotsPerTxn);
    std::optional<Json> reply =
        txn_on_lease(claim_lowest_free(prefix, first, last, value, lease_id,
                                       slots_key(request.lock), request.slots),
                     deadline);
    if (!reply) return std::nullopt;
    if (txn_succeeded(*reply)) {  // the prefix was empty: slot 0
      claimed(0, *reply);
      return claim;
    }
    const Json* mine = txn_response(*reply, 0, "response_txn");  // the owner check
    if (mine == nullptr)
      throw BackendError(ErrorCode::internal, "etcd", "group claim answered no nested reply");
    const Json* innermost = mine;
    if (txn_succeeded(*mine)) {
      const Json* levels = txn_response(*mine, 0, "response_txn");
      if (levels == nullptr)
        throw BackendError(ErrorCode::internal, "etcd", "group claim answered no nested reply");
      auto level = claimed_level(*levels);
      if (const int* depth = std::get_if<int>(&level)) {
        claimed(first + *depth, *reply);
        return claim;
      }
      innermost = std::get<const Json*>(level);
    }
    // A key of this owner's (the caller adopts it), or every slot of this range taken.
    claim.seen.keys = range_kvs(*innermost, 0);
    claim.seen.slots = recorded_slots(range_kvs(*innermost, 1));
    if (!txn_succeeded(*mine)) return claim;
    if (!claim.seen.keys.empty() && !slot_of(claim.seen.keys.front().key.substr(prefix.size())))
      return claim;  // a single leader holds the lock: no slot of any chunk can be free
  }
  return claim;
}

LockState EtcdStore::inspect(std::string_view lock, Deadline deadline) {
  return read_lock(lock, deadline, nullptr);
}

LockState EtcdStore::watch(std::string_view lock, const LockState& last_seen, Deadline deadline,
                           const std::stop_token& stop) {
  validate_lock_name(lock);
  const std::string prefix = lock_prefix(lock);
  for (;;) {
    // At least kWatchLeastReadTime, as the PostgreSQL watch's reads (a read left 1 ms threw
    // deadline_exceeded out of observe_lock on a loaded 3-member cluster).
    std::int64_t revision = 0;
    LockState now = read_lock(lock, detail::watch_read_deadline(deadline), &revision);
    if (!same_holders(now, last_seen) || revision <= 0) return now;
    // Every change after the read: a holder key put or deleted (release, expiry, a new contender).
    const bool changed = gateway_.watch(prefix, prefix_end(prefix), revision + 1, deadline, stop,
                                        [](const Json& events) { return !events.empty(); });
    if (!changed) return now;  // deadline or stop: nothing changed since `now` was read
  }
}

LockState EtcdStore::read_lock(std::string_view lock, Deadline deadline, std::int64_t* revision) {
  LockState state{std::string(lock), {}};
  const std::string prefix = lock_prefix(lock);
  const std::vector<KeyValue> kvs = list(prefix, deadline, revision);  // by create revision
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
    read_holder_value(kv.value, name, h);
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

std::vector<LockState> EtcdStore::list_locks(std::string_view prefix, Deadline deadline) {
  const std::string root = prefix_ + "/";
  std::set<std::string> names;
  for (const KeyValue& kv : list(root + std::string(prefix), deadline)) {
    // Holder keys are `<root><lock>/<name>`; the group size key `<root><lock>` has no '/'.
    const std::string rest = kv.key.substr(root.size());
    const auto slash = rest.find('/');
    if (slash == std::string::npos) continue;
    names.insert(rest.substr(0, slash));
  }
  return detail::held_locks(*this, names, deadline);
}

}  // namespace leader::etcd
