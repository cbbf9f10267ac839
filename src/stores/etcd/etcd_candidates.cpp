// The candidate registry of strategic elections: `<prefix>-candidates/<group>/<node id>`, one key
// per candidate with a JSON value, attached to a lease of the candidate ttl.

#include <chrono>

#include "clients/etcd/codec.hpp"
#include "clients/etcd/ops.hpp"
#include "etcd_store.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"

namespace leader::etcd {
namespace {

using Json = nlohmann::json;
using std::chrono::milliseconds;

constexpr int kMaxCasAttempts = 8;

std::int64_t to_ms(WallTime t) {
  return std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count();
}
WallTime from_ms(std::int64_t ms) { return detail::wall_time_from_epoch_ms(ms); }

std::string encode(const Candidate& c, WallTime registered_at) {
  Json v = {{"node_id", c.node_id},
            {"registered_at_ms", to_ms(registered_at)},
            {"successes", c.successes},
            {"failures", c.failures},
            {"metadata", c.metadata}};
  if (c.last_completion) v["last_completion_ms"] = to_ms(*c.last_completion);
  return v.dump();
}

}  // namespace

std::optional<Candidate> decode_candidate(const std::string& text) {
  Json v = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!v.is_object() || !v.contains("node_id")) return std::nullopt;
  // This library writes whole numbers; a fraction would not convert to an integer safely.
  for (const char* field : {"registered_at_ms", "successes", "failures", "last_completion_ms"})
    if (auto it = v.find(field); it != v.end() && it->is_number() && !it->is_number_integer())
      return std::nullopt;
  try {
    Candidate c;
    c.node_id = v.at("node_id").get<std::string>();
    c.registered_at = from_ms(v.value("registered_at_ms", std::int64_t{0}));
    c.successes = v.value("successes", std::uint64_t{0});
    c.failures = v.value("failures", std::uint64_t{0});
    if (v.contains("last_completion_ms"))
      c.last_completion = from_ms(v.at("last_completion_ms").get<std::int64_t>());
    c.metadata = v.value("metadata", std::map<std::string, std::string>{});
    return c;
  } catch (const Json::exception&) {
    return std::nullopt;  // not written by this library
  }
}

std::string EtcdStore::candidate_prefix(std::string_view group) const {
  return prefix_ + "-candidates/" + std::string(group) + "/";
}

void EtcdStore::put_candidate(std::string_view group, const Candidate& candidate, Duration ttl,
                              Deadline deadline) {
  const std::string key = candidate_prefix(group) + candidate.node_id;
  const std::int64_t lease = grant(ttl_seconds(ttl.count()), deadline).id;
  try {
    // Create with registered_at = now, or overwrite the exact version read, keeping its
    // registered_at; each attempt is one compare-and-set Txn.
    Json compare = ops::create_revision_is(key, 0);
    WallTime registered = std::chrono::system_clock::now();
    std::int64_t old_lease = 0;
    for (int attempt = 0; attempt < kMaxCasAttempts; ++attempt) {
      Json txn = ops::txn(
          Json::array({compare}),
          Json::array({{{"request_put", ops::put(key, encode(candidate, registered), lease)}}}),
          Json::array({{{"request_range", ops::range_key(key)}}}));
      Json reply = gateway_.call("/v3/kv/txn", txn, deadline);
      if (txn_succeeded(reply)) {
        if (old_lease != lease) revoke_quietly(old_lease, deadline);
        return;
      }
      const std::vector<KeyValue> kvs = range_kvs(reply, 0);
      if (kvs.empty()) {
        compare = ops::create_revision_is(key, 0);
        registered = std::chrono::system_clock::now();
        old_lease = 0;
        continue;
      }
      const KeyValue& kv = kvs.front();
      auto existing = decode_candidate(kv.value);
      registered = existing ? existing->registered_at : std::chrono::system_clock::now();
      compare = ops::mod_revision_is(key, kv.mod_revision);
      old_lease = kv.lease;
    }
  } catch (const BackendError&) {
    revoke_quietly(lease, deadline);
    throw;
  }
  revoke_quietly(lease, deadline);
  throw BackendError(ErrorCode::unavailable, "etcd",
                     "candidate '" + candidate.node_id + "' of group '" + std::string(group) +
                         "' changed concurrently " + std::to_string(kMaxCasAttempts) +
                         " times; retry");
}

std::vector<Candidate> EtcdStore::list_candidates(std::string_view group, Deadline deadline) {
  std::vector<Candidate> out;
  for (const KeyValue& kv : list(candidate_prefix(group), deadline))
    if (auto c = decode_candidate(kv.value)) out.push_back(std::move(*c));
  return out;
}

void EtcdStore::remove_candidate(std::string_view group, std::string_view node_id,
                                 Deadline deadline) {
  const std::string key = candidate_prefix(group) + std::string(node_id);
  Json reply = gateway_.call("/v3/kv/deleterange", ops::delete_key(key), deadline);
  for (const KeyValue& kv : decode_kvs(reply, "prev_kvs")) revoke_quietly(kv.lease, deadline);
}

}  // namespace leader::etcd
