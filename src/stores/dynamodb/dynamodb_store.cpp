#include "dynamodb_store.hpp"

#include <algorithm>
#include <set>

#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "observations.hpp"

namespace leader::dynamodb {
namespace {

// A lost race for a slot (another contender wrote it between our read and our write) is retried
// from a fresh read at most this many times before the attempt reports contention.
constexpr int kMaxRounds = 3;
// A contended attempt leaves server-time stamps on at most this many slots (one write each).
constexpr int kMaxStampsPerAttempt = 2;
// Groups up to this size try the optimistic first write (its condition names every slot).
constexpr int kMaxOptimisticSlots = 16;
// Expired records removed per conditional write when a lock changes its size.
constexpr std::size_t kSlotsPerClear = 16;

TimePoint steady_now() { return std::chrono::steady_clock::now(); }

// The slot a contender writes next: a free one, or a held one whose record version this process
// has seen unchanged for its whole lease duration (`rvn` set).
struct SlotChoice {
  int slot = 0;
  std::optional<std::string> rvn;
};

// What is left of a slot's lease by the stronger of the two judges: this process's steady clock
// (the record version unchanged for `unchanged`), and the server's clock (a stamp saying the
// version existed by server time `stamp_ms`, against the server time of the read).
Duration time_left(const SlotRecord& rec, Duration unchanged, std::optional<std::int64_t> now_ms) {
  Duration left = rec.ttl - unchanged;
  if (rec.stamped() && now_ms)
    left = std::min(left, Duration{rec.stamp_ms + rec.ttl.count() - *now_ms});
  return left;
}

std::string describe_size(int slots) {
  return slots == 0 ? "a single leader" : "a group of " + std::to_string(slots) + " slots";
}

std::string size_mismatch(const std::string& lock, int held_as, int asked) {
  return "lock '" + lock + "' is held as " + describe_size(held_as) + "; this request asks for " +
         describe_size(asked);
}

}  // namespace

DynamoStore::DynamoStore(Config config) : client_(std::move(config)) {
  ensure_table(client_, Deadline::after(client_.config().open_timeout));
}

std::string DynamoStore::observation_key(std::string_view lock, int slot) const {
  return client_.config().endpoint + "|" + client_.config().table + "|" + std::string(lock) + "|" +
         std::to_string(slot);
}

DynamoStore::ReadItem DynamoStore::read_lease_item(std::string_view lock, Deadline deadline) {
  nlohmann::json req = {{"TableName", client_.config().table},
                        {"Key", item_key(lease_pk(lock), kLeaseSortKey)},
                        {"ConsistentRead", true}};
  Response r = client_.post("GetItem", req, deadline);
  if (!r.ok()) client_.fail(r, "GetItem");
  ReadItem out{nlohmann::json::object(), r.server_time_ms, steady_now()};
  auto it = r.body.find("Item");
  if (it != r.body.end() && it->is_object()) out.item = std::move(*it);
  return out;
}

void DynamoStore::stamp(std::string_view lock, const SlotRecord& rec, std::int64_t server_ms,
                        Deadline deadline) {
  const SlotNames n(rec.slot);
  // The read answered by server time server_ms + 1 s (Date has whole seconds), so the version it
  // returned existed by then: an upper bound of its write time.
  nlohmann::json req = {
      {"TableName", client_.config().table},
      {"Key", item_key(lease_pk(lock), kLeaseSortKey)},
      {"UpdateExpression", "SET #sv = :r, #s = :u"},
      {"ConditionExpression", "#v = :r AND (attribute_not_exists(#sv) OR #sv <> :r)"},
      {"ExpressionAttributeNames", {{"#v", n.rvn}, {"#sv", n.stamp_rvn}, {"#s", n.stamp}}},
      {"ExpressionAttributeValues", {{":r", s_value(rec.rvn)}, {":u", n_value(server_ms + 1000)}}}};
  Response resp = client_.post("UpdateItem", req, deadline);
  if (!resp.ok() && !resp.condition_failed()) client_.fail(resp, "UpdateItem (stamp)");
}

std::optional<std::uint64_t> DynamoStore::grant(const LeaseRequest& r, int slot,
                                                const GrantGuard& guard, Deadline deadline) {
  const SlotNames n(slot);
  nlohmann::json values = {{":zero", n_value(0)},
                           {":one", n_value(1)},
                           {":o", s_value(r.owner)},
                           {":h", s_value(r.node_id)},
                           {":v", s_value(new_owner_token())},
                           {":d", n_value(r.ttl.count())},
                           {":n", n_value(r.slots)}};
  nlohmann::json names = {{"#f", kFence},       {"#t", n.token}, {"#o", n.owner},
                          {"#h", n.node},       {"#v", n.rvn},   {"#d", n.ttl},
                          {"#sv", n.stamp_rvn}, {"#s", n.stamp}, {"#n", kSize}};
  std::string condition = guard.seen_rvn != nullptr ? "#v = :seen" : "attribute_not_exists(#o)";
  if (guard.seen_rvn != nullptr) values[":seen"] = s_value(*guard.seen_rvn);
  if (guard.size_change) {  // the item must be exactly as read: same size, no grant since
    condition += " AND #n = :old";
    values[":old"] = n_value(guard.old_size);
    condition += guard.fence ? " AND #f = :fence" : " AND attribute_not_exists(#f)";
    if (guard.fence) values[":fence"] = n_value(*guard.fence);
  } else {
    condition += " AND (attribute_not_exists(#n) OR #n = :n)";
  }
  for (int i = 1; i < guard.owner_free_below; ++i) {  // the owner holds no other slot
    const std::string name = "#x" + std::to_string(i);
    names[name] = SlotNames(i).owner;
    condition += " AND NOT (" + name + " = :o)";
  }
  nlohmann::json req = {
      {"TableName", client_.config().table},
      {"Key", item_key(lease_pk(r.lock), kLeaseSortKey)},
      {"UpdateExpression",
       "SET #f = if_not_exists(#f, :zero) + :one, #t = if_not_exists(#f, :zero) + :one, "
       "#o = :o, #h = :h, #v = :v, #d = :d, #n = :n REMOVE #sv, #s"},
      {"ConditionExpression", condition},
      {"ExpressionAttributeNames", names},
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

Acquired DynamoStore::granted(const LeaseRequest& r, int slot, std::uint64_t token) {
  Observations::shared().forget(observation_key(r.lock, slot));
  return Acquired{Lease{r.lock, r.owner, r.node_id, token, slot, r.slots, r.ttl, {}}};
}

std::optional<Acquired> DynamoStore::own_lease(const LeaseRequest& r,
                                               const std::vector<SlotRecord>& held,
                                               Deadline deadline) {
  for (const SlotRecord& rec : held) {
    if (rec.owner != r.owner) continue;
    Lease lease{r.lock, r.owner, r.node_id, rec.token, rec.slot, r.slots, r.ttl, {}};
    if (rewrite(lease, r.ttl, deadline) != LeaseStatus::ok) return std::nullopt;
    return granted(r, rec.slot, rec.token);
  }
  return std::nullopt;
}

bool DynamoStore::clear_slots(std::string_view lock, const std::vector<SlotRecord>& held,
                              std::optional<std::int64_t> fence, Deadline deadline) {
  for (std::size_t first = 0; first < held.size(); first += kSlotsPerClear) {
    nlohmann::json names = {{"#f", kFence}};
    nlohmann::json values = nlohmann::json::object();
    std::string remove = "REMOVE ";
    std::string condition = fence ? "#f = :fence" : "attribute_not_exists(#f)";
    if (fence) values[":fence"] = n_value(*fence);
    for (std::size_t i = first; i < std::min(held.size(), first + kSlotsPerClear); ++i) {
      const SlotNames n(held[i].slot);
      for (const std::string* a :
           {&n.owner, &n.node, &n.rvn, &n.ttl, &n.token, &n.stamp_rvn, &n.stamp}) {
        names["#" + *a] = *a;
        remove += (remove.size() > 7 ? ", #" : "#") + *a;
      }
      const std::string value = ":r" + std::to_string(held[i].slot);
      condition += " AND #" + n.rvn + " = " + value;
      values[value] = s_value(held[i].rvn);
    }
    nlohmann::json req = {
        {"TableName", client_.config().table}, {"Key", item_key(lease_pk(lock), kLeaseSortKey)},
        {"UpdateExpression", remove},          {"ConditionExpression", condition},
        {"ExpressionAttributeNames", names},   {"ExpressionAttributeValues", values}};
    Response resp = client_.post("UpdateItem", req, deadline);
    if (resp.condition_failed()) return false;
    if (!resp.ok()) client_.fail(resp, "UpdateItem (clear expired slots)");
  }
  return true;
}

std::optional<Acquired> DynamoStore::change_size(const LeaseRequest& r, const ReadItem& read,
                                                 const std::vector<SlotRecord>& held,
                                                 std::int64_t old_size, Deadline deadline) {
  Observations& seen = Observations::shared();
  std::vector<const SlotRecord*> live;
  for (const SlotRecord& rec : held) {
    const Duration unchanged =
        seen.observe(observation_key(r.lock, rec.slot), rec.rvn, read.seen_at);
    if (time_left(rec, unchanged, read.server_ms) > Duration{0}) live.push_back(&rec);
  }
  if (!live.empty()) {  // leave stamps so that a later attempt can judge, then refuse
    int stamps = 0;
    for (const SlotRecord* rec : live)
      if (!rec->stamped() && read.server_ms && stamps++ < kMaxStampsPerAttempt)
        stamp(r.lock, *rec, *read.server_ms, deadline);
    throw BackendError(ErrorCode::failed_precondition, "dynamodb",
                       size_mismatch(r.lock, static_cast<int>(old_size), r.slots));
  }
  // Nobody holds the lock as its old size: remove the expired records (so that their owners'
  // renewals fail) and grant slot 0 under the new size, both conditional on the item as read.
  const auto fence = get_n(read.item, kFence);
  if (!clear_slots(r.lock, held, fence, deadline)) return std::nullopt;
  for (const SlotRecord& rec : held) seen.forget(observation_key(r.lock, rec.slot));
  GrantGuard guard;
  guard.size_change = true;
  guard.old_size = old_size;
  guard.fence = fence;
  if (auto token = grant(r, 0, guard, deadline)) return granted(r, 0, *token);
  return std::nullopt;
}

Acquired DynamoStore::contend(const LeaseRequest& r, const ReadItem& read,
                              const std::vector<SlotRecord>& held_records, bool& retry,
                              Deadline deadline) {
  const int slots = std::max(1, r.slots);
  Observations& seen = Observations::shared();
  std::vector<bool> held(static_cast<std::size_t>(slots), false);
  std::optional<SlotChoice> expired;
  std::vector<SlotRecord> unstamped;
  for (const SlotRecord& rec : held_records) {
    if (rec.slot >= slots) continue;
    held[static_cast<std::size_t>(rec.slot)] = true;
    const Duration unchanged =
        seen.observe(observation_key(r.lock, rec.slot), rec.rvn, read.seen_at);
    if (!expired && time_left(rec, unchanged, read.server_ms) <= Duration{0})
      expired = SlotChoice{rec.slot, rec.rvn};
    if (!rec.stamped()) unstamped.push_back(rec);
  }
  std::optional<SlotChoice> choice;
  for (int i = 0; i < slots; ++i) {
    if (held[static_cast<std::size_t>(i)]) continue;
    seen.forget(observation_key(r.lock, i));
    if (!choice) choice = SlotChoice{i, std::nullopt};
  }
  if (!choice) choice = expired;
  if (!choice) {  // contention: leave server-time stamps so that any process can judge later
    for (std::size_t i = 0; i < unstamped.size() && read.server_ms &&
                            i < static_cast<std::size_t>(kMaxStampsPerAttempt);
         ++i)
      stamp(r.lock, unstamped[i], *read.server_ms, deadline);
    return {};
  }
  GrantGuard guard;
  if (choice->rvn) guard.seen_rvn = &*choice->rvn;
  if (auto token = grant(r, choice->slot, guard, deadline)) return granted(r, choice->slot, *token);
  retry = true;
  return {};
}

Acquired DynamoStore::try_acquire(const LeaseRequest& r, Deadline deadline) {
  const int slots = std::max(1, r.slots);
  // Optimistic first write to slot 0 unless this process last saw it held: one round trip. Its
  // condition also makes sure the owner holds no other slot (a retry), for small groups.
  if (slots <= kMaxOptimisticSlots &&
      !Observations::shared().seen_held(observation_key(r.lock, 0))) {
    GrantGuard guard;
    guard.owner_free_below = slots;
    if (auto token = grant(r, 0, guard, deadline)) return granted(r, 0, *token);
  }
  for (int round = 0; round < kMaxRounds; ++round) {
    const ReadItem read = read_lease_item(r.lock, deadline);
    const std::vector<SlotRecord> held = held_slots(read.item);
    if (auto own = own_lease(r, held, deadline)) return std::move(*own);
    if (std::any_of(held.begin(), held.end(),
                    [&](const SlotRecord& rec) { return rec.owner == r.owner; }))
      continue;  // our record changed under us: read again
    if (auto size = get_n(read.item, kSize); size && *size != r.slots) {
      if (auto acquired = change_size(r, read, held, *size, deadline)) return std::move(*acquired);
      continue;
    }
    bool retry = false;
    Acquired got = contend(r, read, held, retry, deadline);
    if (got || !retry) return got;
  }
  return {};
}

LeaseStatus DynamoStore::rewrite(const Lease& lease, Duration ttl, Deadline deadline) {
  const SlotNames n(lease.slot);
  nlohmann::json req = {
      {"TableName", client_.config().table},
      {"Key", item_key(lease_pk(lease.lock), kLeaseSortKey)},
      {"UpdateExpression", "SET #v = :v, #d = :d REMOVE #sv, #s"},
      {"ConditionExpression", "#o = :me"},
      {"ExpressionAttributeNames",
       {{"#o", n.owner}, {"#v", n.rvn}, {"#d", n.ttl}, {"#sv", n.stamp_rvn}, {"#s", n.stamp}}},
      {"ExpressionAttributeValues",
       {{":me", s_value(lease.owner)},
        {":v", s_value(new_owner_token())},
        {":d", n_value(ttl.count())}}}};
  Response resp = client_.post("UpdateItem", req, deadline);
  if (resp.condition_failed()) return LeaseStatus::lost;
  if (!resp.ok()) client_.fail(resp, "UpdateItem (renew)");
  return LeaseStatus::ok;
}

Renewal DynamoStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  if (rewrite(lease, ttl, deadline) != LeaseStatus::ok) return {};
  return {LeaseStatus::ok, ttl};
}

LeaseStatus DynamoStore::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  if (keep_for > Duration{0}) return rewrite(lease, keep_for, deadline);
  const SlotNames n(lease.slot);
  nlohmann::json req = {{"TableName", client_.config().table},
                        {"Key", item_key(lease_pk(lease.lock), kLeaseSortKey)},
                        {"UpdateExpression", "REMOVE #o, #h, #v, #d, #t, #sv, #s"},
                        {"ConditionExpression", "#o = :me"},
                        {"ExpressionAttributeNames",
                         {{"#o", n.owner},
                          {"#h", n.node},
                          {"#v", n.rvn},
                          {"#d", n.ttl},
                          {"#t", n.token},
                          {"#sv", n.stamp_rvn},
                          {"#s", n.stamp}}},
                        {"ExpressionAttributeValues", {{":me", s_value(lease.owner)}}}};
  Response resp = client_.post("UpdateItem", req, deadline);
  if (resp.condition_failed()) return LeaseStatus::lost;
  if (!resp.ok()) client_.fail(resp, "UpdateItem (release)");
  return LeaseStatus::ok;
}

LockState DynamoStore::inspect(std::string_view lock, Deadline deadline) {
  const ReadItem read = read_lease_item(lock, deadline);
  LockState out{std::string(lock), {}};
  for (const SlotRecord& rec : held_slots(read.item)) {
    const Duration unchanged =
        Observations::shared().observe(observation_key(lock, rec.slot), rec.rvn, read.seen_at);
    const Duration left = time_left(rec, unchanged, read.server_ms);
    if (left <= Duration{0}) continue;  // expired as the judges see it
    out.holders.push_back(Holder{rec.node_id, rec.owner, rec.token, rec.slot, left});
  }
  return out;
}

std::vector<LockState> DynamoStore::list_locks(std::string_view prefix, Deadline deadline) {
  const std::string pk_prefix = lease_pk(std::string(prefix));
  nlohmann::json req = {{"TableName", client_.config().table},
                        {"FilterExpression", "begins_with(#pk, :prefix) AND #sk = :lease"},
                        {"ProjectionExpression", "#pk"},
                        {"ExpressionAttributeNames", {{"#pk", kPartitionKey}, {"#sk", kSortKey}}},
                        {"ExpressionAttributeValues",
                         {{":prefix", s_value(pk_prefix)}, {":lease", s_value(kLeaseSortKey)}}},
                        {"ConsistentRead", true}};
  const std::string lease_pk_start = lease_pk("");
  std::set<std::string> names;
  while (true) {
    nlohmann::json reply = client_.call("Scan", req, deadline);
    for (const auto& item : reply.value("Items", nlohmann::json::array())) {
      const std::string pk = get_s(item, kPartitionKey).value_or("");
      if (pk.rfind(pk_prefix, 0) != 0) continue;
      names.insert(pk.substr(lease_pk_start.size()));
    }
    auto next = reply.find("LastEvaluatedKey");
    if (next == reply.end() || !next->is_object() || next->empty()) break;
    req["ExclusiveStartKey"] = *next;
  }
  return detail::held_locks(*this, names, deadline);
}

}  // namespace leader::dynamodb
