// Candidates of strategic elections: one Lease object per (group, node id), named
// "leader-candidate-<hash(group)>-<hash(node)>", labelled with the group's hash, the entry as JSON
// in an annotation. Candidate expiry is bookkeeping, not lease safety: it uses the writer's wall
// clock (`expires_ms`), compared with the reader's (README.md, "Candidates").

#include "http/json.hpp"
#include "k8s_store.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"

namespace leader::k8s {
namespace {

constexpr const char* kCandidateLabel = "leader/candidates";
constexpr const char* kGroupAnnotation = "leader/group";
constexpr const char* kCandidateAnnotation = "leader/candidate";
constexpr int kWriteAttempts = 4;

std::int64_t epoch_ms(WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::string candidate_name(std::string_view group, std::string_view node_id) {
  return "leader-candidate-" + short_hash(group) + "-" + short_hash(node_id);
}

nlohmann::json entry_of(const Candidate& c, std::int64_t registered_ms, Duration ttl) {
  const auto now = std::chrono::system_clock::now();
  nlohmann::json e{{"node", c.node_id},        {"registered_ms", registered_ms},
                   {"successes", c.successes}, {"failures", c.failures},
                   {"metadata", c.metadata},   {"expires_ms", epoch_ms(now) + ttl.count()}};
  if (c.last_completion) e["last_completion_ms"] = epoch_ms(*c.last_completion);
  return e;
}

// The entry of a candidate object of `group`; nullopt for any other object.
std::optional<nlohmann::json> entry_in(const nlohmann::json& object, std::string_view group) {
  const nlohmann::json* meta = http::member(object, "metadata");
  const nlohmann::json* a = meta != nullptr ? http::member(*meta, "annotations") : nullptr;
  if (a == nullptr || http::field<std::string>(*a, kGroupAnnotation) != group) return std::nullopt;
  auto e = nlohmann::json::parse(http::field<std::string>(*a, kCandidateAnnotation).value_or(""),
                                 nullptr, false);
  if (!e.is_object()) return std::nullopt;
  return e;
}

Candidate candidate_of(const nlohmann::json& e) {
  Candidate c;
  c.node_id = e.value("node", "");
  c.registered_at = detail::wall_time_from_epoch_ms(e.value("registered_ms", std::int64_t{0}));
  c.successes = e.value("successes", std::uint64_t{0});
  c.failures = e.value("failures", std::uint64_t{0});
  if (e.contains("last_completion_ms"))
    c.last_completion =
        detail::wall_time_from_epoch_ms(e["last_completion_ms"].get<std::int64_t>());
  if (e.contains("metadata") && e["metadata"].is_object())
    c.metadata = e["metadata"].get<std::map<std::string, std::string>>();
  return c;
}

nlohmann::json candidate_object(nlohmann::json base, const std::string& name,
                                std::string_view group, const nlohmann::json& entry, Duration ttl) {
  if (!base.is_object()) base = nlohmann::json{{"metadata", {{"name", name}}}};
  base["apiVersion"] = "coordination.k8s.io/v1";
  base["kind"] = "Lease";
  auto& meta = base["metadata"];
  meta["labels"][kCandidateLabel] = short_hash(group);
  meta["annotations"][kGroupAnnotation] = std::string(group);
  meta["annotations"][kCandidateAnnotation] = entry.dump();
  const std::string now = micro_time(std::chrono::system_clock::now());
  base["spec"] = {{"holderIdentity", entry["node"]},
                  {"leaseDurationSeconds", duration_seconds(ttl)},
                  {"acquireTime", now},
                  {"renewTime", now}};
  return base;
}

}  // namespace

void K8sStore::put_candidate(std::string_view group, const Candidate& candidate, Duration ttl,
                             Deadline deadline) {
  const std::string name = candidate_name(group, candidate.node_id);
  for (int attempt = 0; attempt < kWriteAttempts; ++attempt) {
    const Reply r = api_.get(name, deadline);
    std::int64_t registered = epoch_ms(std::chrono::system_clock::now());
    nlohmann::json base;
    if (r.ok()) {
      base = r.body;
      if (auto e = entry_in(r.body, group)) registered = e->value("registered_ms", registered);
    }
    const auto object =
        candidate_object(base, name, group, entry_of(candidate, registered, ttl), ttl);
    const Reply w = r.ok() ? api_.replace(name, object, deadline) : api_.create(object, deadline);
    if (w.ok()) return;
  }
  throw BackendError(ErrorCode::unavailable, "k8s",
                     "candidate object '" + name + "' kept changing under " +
                         std::to_string(kWriteAttempts) + " conditional writes");
}

std::vector<Candidate> K8sStore::list_candidates(std::string_view group, Deadline deadline) {
  const Reply r = api_.list(std::string(kCandidateLabel) + "=" + short_hash(group), deadline);
  std::vector<Candidate> out;
  const auto items = r.ok() ? r.body.value("items", nlohmann::json::array()) : nlohmann::json();
  if (!items.is_array()) return out;  // null: an empty list
  const auto now = epoch_ms(std::chrono::system_clock::now());
  for (const auto& item : items) {
    auto e = entry_in(item, group);
    if (e && e->value("expires_ms", std::int64_t{0}) > now) out.push_back(candidate_of(*e));
  }
  return out;
}

void K8sStore::remove_candidate(std::string_view group, std::string_view node_id,
                                Deadline deadline) {
  (void)api_.remove(candidate_name(group, node_id), deadline);  // 404: already gone
}

}  // namespace leader::k8s
