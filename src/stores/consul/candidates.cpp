// Candidates of strategic elections: one key per candidate under
// `<prefix>/<group>/.candidates/n-<hex of node_id>`, held by a session of the candidate's TTL with
// Behavior "delete", so Consul deletes the key when the TTL runs out (see README.md).

#include <chrono>

#include "consul_store.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"

namespace leader::consul {
namespace {

using Json = nlohmann::json;

std::int64_t epoch_ms(WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::string hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  }
  return out;
}

std::string encode_candidate(const Candidate& c, Duration ttl) {
  Json j = {{"node_id", c.node_id},     {"registered_at_ms", epoch_ms(c.registered_at)},
            {"successes", c.successes}, {"failures", c.failures},
            {"metadata", c.metadata},   {"ttl_ms", ttl.count()}};
  if (c.last_completion) j["last_completion_ms"] = epoch_ms(*c.last_completion);
  return j.dump();
}

std::optional<Candidate> decode_candidate(std::string_view text, Duration* ttl = nullptr) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("node_id") || !j["node_id"].is_string()) return std::nullopt;
  Candidate c;
  c.node_id = j["node_id"].get<std::string>();
  auto num = [&](const char* k) -> std::int64_t {
    auto it = j.find(k);
    return it != j.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
  };
  c.registered_at = detail::wall_time_from_epoch_ms(num("registered_at_ms"));
  c.successes = static_cast<std::uint64_t>(std::max<std::int64_t>(num("successes"), 0));
  c.failures = static_cast<std::uint64_t>(std::max<std::int64_t>(num("failures"), 0));
  if (j.contains("last_completion_ms"))
    c.last_completion = detail::wall_time_from_epoch_ms(num("last_completion_ms"));
  if (auto m = j.find("metadata"); m != j.end() && m->is_object())
    for (const auto& [k, v] : m->items())
      if (v.is_string()) c.metadata[k] = v.get<std::string>();
  if (ttl) *ttl = Duration{num("ttl_ms")};
  return c;
}

}  // namespace

std::string ConsulStore::candidate_key(std::string_view group, std::string_view node) const {
  return lock_path(group) + "/.candidates/n-" + hex(node);
}

void ConsulStore::put_candidate(std::string_view group, const Candidate& candidate, Duration ttl,
                                Deadline deadline) {
  const std::string key = candidate_key(group, candidate.node_id);
  const Duration want = session_ttl(ttl);
  auto old = api_.get(key, deadline);
  Duration old_ttl{};
  std::optional<Candidate> before = old ? decode_candidate(old->value, &old_ttl) : std::nullopt;
  Candidate c = candidate;
  c.registered_at = before ? before->registered_at : std::chrono::system_clock::now();
  const std::string value = encode_candidate(c, want);
  if (old && !old->session.empty() && before && old_ttl == want &&
      api_.renew_session(old->session, deadline)) {
    api_.put(key, value, deadline);  // a plain write keeps the holding session
    return;
  }
  const std::string sid = api_.create_session(
      {"leader candidate " + candidate.node_id.substr(0, 100), want, Duration{0}, true}, deadline);
  if (old && !old->session.empty()) api_.destroy_quietly(old->session, deadline);
  TxnResult r;
  try {
    r = api_.txn(Json::array({kv_op("lock", key, value, 0, 0, sid)}), deadline);
  } catch (...) {
    api_.destroy_quietly(sid, deadline);
    throw;
  }
  if (!r.committed) {
    api_.destroy_quietly(sid, deadline);
    throw BackendError(
        ErrorCode::unavailable, "consul",
        "candidate '" + candidate.node_id + "' was being registered concurrently: " + r.errors);
  }
}

std::vector<Candidate> ConsulStore::list_candidates(std::string_view group, Deadline deadline) {
  Tree tree = api_.list(lock_path(group) + "/.candidates/", deadline);
  std::vector<Candidate> out;
  for (const Entry& e : tree.entries)
    if (!e.session.empty())
      if (auto c = decode_candidate(e.value)) out.push_back(std::move(*c));
  return out;
}

void ConsulStore::remove_candidate(std::string_view group, std::string_view node_id,
                                   Deadline deadline) {
  const std::string key = candidate_key(group, node_id);
  auto e = api_.get(key, deadline);
  if (!e) return;
  if (!e->session.empty()) api_.destroy_session(e->session, deadline);  // deletes the key
  if (auto left = api_.get(key, deadline); left && left->session.empty())
    (void)api_.delete_cas(key, left->modify_index, deadline);
}

}  // namespace leader::consul
