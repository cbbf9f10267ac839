#include "dynamodb_store.hpp"

#include <algorithm>

#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "observations.hpp"

namespace leader::dynamodb {
namespace {

// A lost race for a slot (another contender wrote it between our read and our write) is retried
// from a fresh read at most this many times before the attempt reports contention.
constexpr int kMaxRounds = 3;

TimePoint steady_now() { return std::chrono::steady_clock::now(); }

// The slot a contender writes next: a free one, or a held one whose record version this process
// has seen unchanged for its whole lease duration (`rvn` set).
struct SlotChoice {
  int slot = 0;
  std::optional<std::string> rvn;
};

void validate_request(const LeaseRequest& r) {
  validate_lock_name(r.lock);
  if (r.slots < 0 || r.slots > kMaxSlots)
    throw InvalidArgument("dynamodb: slots = " + std::to_string(r.slots) + " is outside 0.." +
                          std::to_string(kMaxSlots));
  if (r.ttl <= Duration{0})
    throw InvalidArgument("dynamodb: ttl = " + std::to_string(r.ttl.count()) + "ms must be > 0");
}

}  // namespace

DynamoStore::DynamoStore(Config config) : client_(std::move(config)) {
  ensure_table(client_, Deadline::after(client_.config().open_timeout));
}

std::string DynamoStore::observation_key(std::string_view lock, int slot) const {
  return client_.config().endpoint + "|" + client_.config().table + "|" + std::string(lock) + "|" +
         std::to_string(slot);
}

nlohmann::json DynamoStore::read_lease_item(std::string_view lock, Deadline deadline) {
  nlohmann::json req = {{"TableName", client_.config().table},
                        {"Key", item_key(lease_pk(lock), kLeaseSortKey)},
                        {"ConsistentRead", true}};
  nlohmann::json reply = client_.call("GetItem", req, deadline);
  auto it = reply.find("Item");
  return it != reply.end() && it->is_object() ? *it : nlohmann::json::object();
}

std::optional<std::uint64_t> DynamoStore::grant(const LeaseRequest& r, int slot,
                                                const std::string* seen_rvn, Deadline deadline) {
  const SlotNames n(slot);
  nlohmann::json values = {{":zero", n_value(0)},
                           {":one", n_value(1)},
                           {":o", s_value(r.owner)},
                           {":h", s_value(r.node_id)},
                           {":v", s_value(new_owner_token())},
                           {":d", n_value(r.ttl.count())}};
  if (seen_rvn != nullptr) values[":seen"] = s_value(*seen_rvn);
  nlohmann::json req = {
      {"TableName", client_.config().table},
      {"Key", item_key(lease_pk(r.lock), kLeaseSortKey)},
      {"UpdateExpression",
       "SET #f = if_not_exists(#f, :zero) + :one, #t = if_not_exists(#f, :zero) + :one, "
       "#o = :o, #h = :h, #v = :v, #d = :d"},
      {"ConditionExpression", seen_rvn != nullptr ? "#v = :seen" : "attribute_not_exists(#o)"},
      {"ExpressionAttributeNames",
       {{"#f", kFence},
        {"#t", n.token},
        {"#o", n.owner},
        {"#h", n.node},
        {"#v", n.rvn},
        {"#d", n.ttl}}},
      {"ExpressionAttributeValues", values},
      {"ReturnValues", "UPDATED_NEW"}};
  Response resp = client_.post("UpdateItem", req, deadline);
  if (resp.condition_failed()) return std::nullopt;
  if (!resp.ok()) client_.fail(resp, "UpdateItem (acquire)");
  auto token = get_n(resp.body.value("Attributes", nlohmann::json::object()), n.token);
  if (!token || *token <= 0)
    throw BackendError(ErrorCode::internal, "dynamodb",
                       "UpdateItem (acquire) returned no fencing token for lock '" + r.lock + "'");
  return static_cast<std::uint64_t>(*token);
}

Acquired DynamoStore::try_acquire(const LeaseRequest& r, Deadline deadline) {
  validate_request(r);
  const int slots = std::max(1, r.slots);
  Observations& seen = Observations::shared();
  auto granted = [&](int slot, std::uint64_t token) {
    seen.forget(observation_key(r.lock, slot));
    return Acquired{Lease{r.lock, r.owner, r.node_id, token, slot, r.slots, r.ttl, {}}};
  };
  // Optimistic first write to slot 0 unless this process last saw it held: one round trip.
  if (!seen.seen_held(observation_key(r.lock, 0)))
    if (auto token = grant(r, 0, nullptr, deadline)) return granted(0, *token);
  for (int round = 0; round < kMaxRounds; ++round) {
    const nlohmann::json item = read_lease_item(r.lock, deadline);
    const TimePoint seen_at = steady_now();  // when the read returned: the conservative time
    std::vector<bool> held(static_cast<std::size_t>(slots), false);
    std::optional<SlotChoice> expired;
    for (const SlotRecord& rec : held_slots(item)) {
      if (rec.slot >= slots) continue;
      held[static_cast<std::size_t>(rec.slot)] = true;
      const Duration unchanged = seen.observe(observation_key(r.lock, rec.slot), rec.rvn, seen_at);
      if (!expired && unchanged >= rec.ttl) expired = SlotChoice{rec.slot, rec.rvn};
    }
    std::optional<SlotChoice> choice;
    for (int i = 0; i < slots; ++i) {
      if (held[static_cast<std::size_t>(i)]) continue;
      seen.forget(observation_key(r.lock, i));
      if (!choice) choice = SlotChoice{i, std::nullopt};
    }
    if (!choice) choice = expired;
    if (!choice) return {};
    if (auto token = grant(r, choice->slot, choice->rvn ? &*choice->rvn : nullptr, deadline))
      return granted(choice->slot, *token);
  }
  return {};
}

LeaseStatus DynamoStore::rewrite(const Lease& lease, Duration ttl, Deadline deadline) {
  const SlotNames n(lease.slot);
  nlohmann::json req = {
      {"TableName", client_.config().table},
      {"Key", item_key(lease_pk(lease.lock), kLeaseSortKey)},
      {"UpdateExpression", "SET #v = :v, #d = :d"},
      {"ConditionExpression", "#o = :me"},
      {"ExpressionAttributeNames", {{"#o", n.owner}, {"#v", n.rvn}, {"#d", n.ttl}}},
      {"ExpressionAttributeValues",
       {{":me", s_value(lease.owner)},
        {":v", s_value(new_owner_token())},
        {":d", n_value(ttl.count())}}}};
  Response resp = client_.post("UpdateItem", req, deadline);
  if (resp.condition_failed()) return LeaseStatus::lost;
  if (!resp.ok()) client_.fail(resp, "UpdateItem (renew)");
  return LeaseStatus::ok;
}

LeaseStatus DynamoStore::renew(Lease& lease, Duration ttl, Deadline deadline) {
  if (ttl <= Duration{0})
    throw InvalidArgument("dynamodb: renew ttl = " + std::to_string(ttl.count()) +
                          "ms must be > 0");
  const LeaseStatus status = rewrite(lease, ttl, deadline);
  if (status == LeaseStatus::ok) lease.ttl = ttl;
  return status;
}

LeaseStatus DynamoStore::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  if (keep_for > Duration{0}) return rewrite(lease, keep_for, deadline);
  const SlotNames n(lease.slot);
  nlohmann::json req = {
      {"TableName", client_.config().table},
      {"Key", item_key(lease_pk(lease.lock), kLeaseSortKey)},
      {"UpdateExpression", "REMOVE #o, #h, #v, #d, #t"},
      {"ConditionExpression", "#o = :me"},
      {"ExpressionAttributeNames",
       {{"#o", n.owner}, {"#h", n.node}, {"#v", n.rvn}, {"#d", n.ttl}, {"#t", n.token}}},
      {"ExpressionAttributeValues", {{":me", s_value(lease.owner)}}}};
  Response resp = client_.post("UpdateItem", req, deadline);
  if (resp.condition_failed()) return LeaseStatus::lost;
  if (!resp.ok()) client_.fail(resp, "UpdateItem (release)");
  return LeaseStatus::ok;
}

LockState DynamoStore::inspect(std::string_view lock, Deadline deadline) {
  validate_lock_name(lock);
  const nlohmann::json item = read_lease_item(lock, deadline);
  const TimePoint seen_at = steady_now();
  LockState out{std::string(lock), {}};
  for (const SlotRecord& rec : held_slots(item)) {
    const Duration unchanged =
        Observations::shared().observe(observation_key(lock, rec.slot), rec.rvn, seen_at);
    if (unchanged >= rec.ttl) continue;  // expired as this process judges it
    out.holders.push_back(Holder{rec.node_id, rec.owner, rec.token, rec.slot, rec.ttl - unchanged});
  }
  return out;
}

}  // namespace leader::dynamodb
