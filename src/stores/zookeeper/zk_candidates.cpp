// Candidate registry of strategic elections: one ephemeral node per candidate under
// <root>-candidates/<group>/<node_id> with JSON data. The TTL is judged on server time only: a
// candidate is alive while its node's mtime (set by the server on each put) plus its ttl is not
// older than the server's current time, read as the mtime of a write to the group node.

#include <nlohmann/json.hpp>

#include "leader/errors.hpp"
#include "zk_data.hpp"
#include "zk_store.hpp"

namespace leader::zookeeper {
namespace {

using Json = nlohmann::json;

std::int64_t to_ms(WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::string candidate_data(const Candidate& c, std::int64_t registered_ms, Duration ttl) {
  Json j{{"node_id", c.node_id},     {"registered_at_ms", registered_ms},
         {"successes", c.successes}, {"failures", c.failures},
         {"ttl_ms", ttl.count()},    {"metadata", c.metadata}};
  j["last_completion_ms"] = c.last_completion ? Json(to_ms(*c.last_completion)) : Json(nullptr);
  return j.dump();
}

}  // namespace

std::string ZooKeeperStore::candidate_dir(std::string_view group) const {
  return config_.root + "-candidates/" + escape_component(group);
}

void ZooKeeperStore::put_candidate(std::string_view group, const Candidate& candidate, Duration ttl,
                                   Deadline deadline) {
  const std::string dir = candidate_dir(group);
  const std::string path = dir + "/" + escape_component(candidate.node_id);
  std::int64_t registered = to_ms(std::chrono::system_clock::now());
  for (int attempt = 0; attempt < 4; ++attempt) {
    Reply cur = session().get(path, deadline);
    if (cur.rc == kNoNode) {
      Reply r = session().create(path, candidate_data(candidate, registered, ttl),
                                 CreateMode::ephemeral, deadline);
      if (r.rc == kOk) return;
      if (r.rc != kNodeExists) session().fail(r.rc, "create " + path);
      continue;  // created concurrently: update it
    }
    if (auto old = parse_candidate(cur.value)) registered = to_ms(old->registered_at);
    if (cur.stat.ephemeral_owner != session().session_id()) {
      // Owned by another (possibly dead) session: replace it so it lives with ours.
      session().remove(path, cur.stat.version, deadline);
      continue;
    }
    Reply r =
        session().set(path, candidate_data(candidate, registered, ttl), cur.stat.version, deadline);
    if (r.rc == kOk) return;
  }
  throw BackendError(ErrorCode::unavailable, config_.scheme,
                     "candidate " + candidate.node_id + " kept changing concurrently");
}

std::vector<Candidate> ZooKeeperStore::list_candidates(std::string_view group, Deadline deadline) {
  const std::string dir = candidate_dir(group);
  Reply clock = session().set(dir, "", -1, deadline);  // its mtime is the server's "now"
  if (clock.rc == kNoNode) return {};
  const std::int64_t server_now = clock.stat.mtime;
  Reply kids = session().children(dir, deadline);
  std::vector<Pending> pending;
  pending.reserve(kids.children.size());
  const std::string parent = dir + "/";
  for (const auto& c : kids.children) pending.push_back(session().get_async(parent + c, deadline));
  std::vector<Candidate> out;
  for (std::size_t i = 0; i < pending.size(); ++i) {
    Reply r = pending[i].wait(deadline, "get " + dir + "/" + kids.children[i]);
    if (r.rc != kOk) continue;
    auto c = parse_candidate(r.value);
    if (!c) continue;
    if (candidate_expired(r.value, r.stat.mtime, server_now)) {  // expired: drop it (best effort)
      try {
        session().remove(dir + "/" + kids.children[i], r.stat.version, deadline);
      } catch (const BackendError&) {
      }
      continue;
    }
    out.push_back(std::move(*c));
  }
  return out;
}

void ZooKeeperStore::remove_candidate(std::string_view group, std::string_view node_id,
                                      Deadline deadline) {
  const std::string path = candidate_dir(group) + "/" + escape_component(node_id);
  session().remove(path, -1, deadline);  // kNoNode is fine
}

}  // namespace leader::zookeeper
