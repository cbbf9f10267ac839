// The candidate registry of strategic elections: one item per (group, node) under the partition
// key "candidates#<group>", listed with one Query. Candidate expiry uses wall-clock epoch
// milliseconds (bookkeeping only; lease safety never depends on it; see README.md).

#include <chrono>

#include "dynamodb_store.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "replies.hpp"

namespace leader::dynamodb {
namespace {

// Expired entries found by a list are deleted (conditionally) up to this many per call.
constexpr int kMaxCleanupPerList = 8;

std::int64_t to_ms(WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

WallTime from_ms(std::int64_t ms) { return detail::wall_time_from_epoch_ms(ms); }

std::string encode_metadata(const std::map<std::string, std::string>& metadata) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : metadata) j[k] = v;
  return j.dump();
}

std::map<std::string, std::string> decode_metadata(const std::string& text) {
  std::map<std::string, std::string> out;
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return out;
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it->is_string()) out[it.key()] = it->get<std::string>();
  return out;
}

const nlohmann::json kNames = {
    {"#n", "node"},      {"#r", "registered_ms"},      {"#s", "successes"},
    {"#f", "failures"},  {"#l", "last_completion_ms"}, {"#m", "metadata"},
    {"#e", "expires_ms"}};

}  // namespace

Candidate decode_candidate(const nlohmann::json& item) {
  Candidate c;
  c.node_id = get_s(item, "node").value_or(get_s(item, kSortKey).value_or(""));
  c.registered_at = from_ms(get_n(item, "registered_ms").value_or(0));
  c.successes = static_cast<std::uint64_t>(get_n(item, "successes").value_or(0));
  c.failures = static_cast<std::uint64_t>(get_n(item, "failures").value_or(0));
  if (auto last = get_n(item, "last_completion_ms")) c.last_completion = from_ms(*last);
  c.metadata = decode_metadata(get_s(item, "metadata").value_or("{}"));
  return c;
}

void DynamoStore::put_candidate(std::string_view group, const Candidate& c, Duration ttl,
                                Deadline deadline) {
  const std::int64_t now = to_ms(std::chrono::system_clock::now());
  nlohmann::json values = {{":n", s_value(c.node_id)},
                           {":s", n_value(static_cast<std::int64_t>(c.successes))},
                           {":f", n_value(static_cast<std::int64_t>(c.failures))},
                           {":m", s_value(encode_metadata(c.metadata))},
                           {":e", n_value(now + ttl.count())},
                           {":now", n_value(now)}};
  std::string update =
      "SET #n = :n, #s = :s, #f = :f, #m = :m, #e = :e, "
      "#r = if_not_exists(#r, :now)";
  if (c.last_completion) {
    values[":l"] = n_value(to_ms(*c.last_completion));
    update += ", #l = :l";
  } else {
    update += " REMOVE #l";
  }
  const nlohmann::json key = item_key(candidates_pk(group), c.node_id);
  nlohmann::json req = {{"TableName", client_.config().table},
                        {"Key", key},
                        {"UpdateExpression", update},
                        // keep registered_ms only while the entry is live
                        {"ConditionExpression", "attribute_not_exists(#e) OR #e > :now"},
                        {"ExpressionAttributeNames", kNames},
                        {"ExpressionAttributeValues", values}};
  Response resp = client_.post("UpdateItem", req, deadline);
  if (resp.ok()) return;
  if (!resp.condition_failed()) client_.fail(resp, "UpdateItem (put_candidate)");
  // The old entry had expired: register afresh.
  nlohmann::json item = key;
  item["node"] = values[":n"];
  item["successes"] = values[":s"];
  item["failures"] = values[":f"];
  item["metadata"] = values[":m"];
  item["expires_ms"] = values[":e"];
  item["registered_ms"] = values[":now"];
  if (c.last_completion) item["last_completion_ms"] = values[":l"];
  client_.call("PutItem", {{"TableName", client_.config().table}, {"Item", item}}, deadline);
}

std::vector<Candidate> DynamoStore::list_candidates(std::string_view group, Deadline deadline) {
  const std::string pk = candidates_pk(group);
  nlohmann::json req = {{"TableName", client_.config().table},
                        {"KeyConditionExpression", "#pk = :pk"},
                        {"ExpressionAttributeNames", {{"#pk", kPartitionKey}}},
                        {"ExpressionAttributeValues", {{":pk", s_value(pk)}}},
                        {"ConsistentRead", true}};
  std::vector<Candidate> out;
  std::vector<std::pair<std::string, std::int64_t>> expired;
  const std::int64_t now = to_ms(std::chrono::system_clock::now());
  while (true) {
    nlohmann::json reply = client_.call("Query", req, deadline);
    for (const auto& item : reply.value("Items", nlohmann::json::array())) {
      const std::int64_t expires = get_n(item, "expires_ms").value_or(0);
      if (expires > now)
        out.push_back(decode_candidate(item));
      else
        expired.emplace_back(get_s(item, kSortKey).value_or(""), expires);
    }
    auto next = reply.find("LastEvaluatedKey");
    if (next == reply.end() || !next->is_object() || next->empty()) break;
    req["ExclusiveStartKey"] = *next;
  }
  int cleaned = 0;
  for (const auto& [node, expires] : expired) {
    if (cleaned++ >= kMaxCleanupPerList || deadline.expired()) break;
    delete_expired(pk, node, expires, deadline);
  }
  return out;
}

void DynamoStore::delete_expired(const std::string& pk, const std::string& node,
                                 std::int64_t expires_ms, Deadline deadline) {
  nlohmann::json req = {{"TableName", client_.config().table},
                        {"Key", item_key(pk, node)},
                        {"ConditionExpression", "#e = :e"},
                        {"ExpressionAttributeNames", {{"#e", "expires_ms"}}},
                        {"ExpressionAttributeValues", {{":e", n_value(expires_ms)}}}};
  try {
    (void)client_.post("DeleteItem", req, deadline);  // a refreshed entry fails the condition
  } catch (const BackendError&) {
    // Clean-up is best effort; the list itself is complete.
  }
}

void DynamoStore::remove_candidate(std::string_view group, std::string_view node_id,
                                   Deadline deadline) {
  client_.call("DeleteItem",
               {{"TableName", client_.config().table},
                {"Key", item_key(candidates_pk(group), std::string(node_id))}},
               deadline);
}

}  // namespace leader::dynamodb
