#include "zk_core.hpp"

// A Core's leases after their acquisition: the same owner asking again, adoption of a node whose
// create reply was lost, places in line, renewal, release, and the orphans left to its timer.

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "leader/errors.hpp"

namespace leader::zookeeper {
namespace {

TimePoint steady_now() { return std::chrono::steady_clock::now(); }

}  // namespace

Core::Core(Config config) : config_(std::move(config)), session_(config_.session) {}

void Core::close() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  cv_.notify_all();
}

std::optional<Held> Core::held(const std::string& owner) {
  const std::uint64_t generation = session_.generation();
  std::lock_guard lock(mu_);
  auto it = current(owner, generation);
  if (it == held_.end()) return std::nullopt;
  return it->second;
}

std::optional<Lease> Core::reacquire(const LeaseRequest& request, const std::string& dir,
                                     Deadline deadline) {
  auto h = held(request.owner);
  if (!h || h->kept || !h->path.starts_with(dir + "/")) return std::nullopt;
  Lease lease{request.lock, request.owner, request.node_id, static_cast<std::uint64_t>(h->czxid),
              h->slot,      request.slots, request.ttl,     {}};
  const Renewal r = renew(lease, request.ttl, deadline);
  if (r.status != LeaseStatus::ok) return std::nullopt;
  lease.ttl = r.ttl;
  return lease;
}

std::optional<Lease> Core::adopt(const LeaseRequest& request, const std::string& path,
                                 const std::string& data, int slot, Deadline deadline) {
  const std::uint64_t generation = session_.generation();
  const TimePoint sent_at = steady_now();
  Reply r = session_.get(path, deadline);
  if (r.rc != kOk || r.stat.ephemeral_owner != session_.session_id()) return std::nullopt;
  auto recorded = nlohmann::json::parse(r.value, nullptr, false);
  if (!recorded.is_object() || recorded.value("owner", "") != request.owner) return std::nullopt;
  Reply set = session_.set(path, data, r.stat.version, deadline);
  if (set.rc != kOk || generation != session_.generation()) return std::nullopt;
  return track(request, path, r.stat, slot, sent_at, generation);
}

void Core::wait_in_line(const std::string& owner, Waiting place) {
  std::lock_guard lock(mu_);
  waiting_[owner] = std::move(place);
}

std::optional<Waiting> Core::place_of(const std::string& owner) {
  const std::uint64_t generation = session_.generation();  // read before mu_ (its own lock)
  std::lock_guard lock(mu_);
  auto it = waiting_.find(owner);
  if (it == waiting_.end()) return std::nullopt;
  if (it->second.generation != generation) {
    waiting_.erase(it);  // its session has gone, and its node with it
    return std::nullopt;
  }
  return it->second;
}

std::optional<Waiting> Core::leave_line(const std::string& owner) {
  std::lock_guard lock(mu_);
  auto it = waiting_.find(owner);
  if (it == waiting_.end()) return std::nullopt;
  Waiting place = std::move(it->second);
  waiting_.erase(it);
  return place;
}

Renewal Core::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  const RenewalRequest request{&lease, ttl};
  std::vector<BatchRenewal> out(1);
  renew_batch({&request, 1}, {0}, deadline, out);
  if (out[0].error) throw *out[0].error;
  return out[0].renewal;
}

void Core::renew_batch(std::span<const RenewalRequest> requests,
                       const std::vector<std::size_t>& indices, Deadline deadline,
                       std::vector<BatchRenewal>& out) {
  std::vector<std::pair<std::size_t, Held>> asked;  // request index, its tracked lease
  asked.reserve(indices.size());
  for (std::size_t i : indices)
    if (auto h = held(requests[i].lease->owner)) asked.emplace_back(i, std::move(*h));
  const TimePoint sent_at = steady_now();  // before anything is sent
  // Per session generation (a lease tracked under an older one was dropped by held()).
  std::map<std::uint64_t, std::vector<std::size_t>> by_generation;  // -> positions in `asked`
  for (std::size_t k = 0; k < asked.size(); ++k) {
    const Lease& lease = *requests[asked[k].first].lease;
    const Held& h = asked[k].second;
    if (h.kept || h.czxid != static_cast<std::int64_t>(lease.fencing_token) ||
        sent_at >= h.expire_at)
      continue;  // lost
    by_generation[h.generation].push_back(k);
  }
  for (const auto& [generation, positions] : by_generation) {
    std::vector<Session::OwnNode> nodes;
    nodes.reserve(positions.size());
    for (std::size_t k : positions)
      nodes.push_back({asked[k].second.path, asked[k].second.czxid, asked[k].second.watch});
    // On the session that created the nodes only: a newer session proves nothing about them.
    const auto stats = session_.renew_own_batch(nodes, generation, deadline);
    std::vector<Duration> grants;
    grants.reserve(positions.size());
    for (std::size_t k : positions) grants.push_back(granted(requests[asked[k].first].ttl));
    bool sooner = false;  // the timer sleeps until the earliest deletion time it saw: wake it
    std::unique_lock lock(mu_);
    for (std::size_t j = 0; j < positions.size(); ++j) {
      const auto& [i, h] = asked[positions[j]];
      const Lease& lease = *requests[i].lease;
      auto it = held_.find(lease.owner);
      const bool same =
          it != held_.end() && it->second.czxid == h.czxid && it->second.generation == generation;
      if (same) it->second.watch = nodes[j].watch;  // assigned at its first renewal
      if (stats[j].error) {                         // unknown: the lease stays as it was
        out[i].error = stats[j].error;
        continue;
      }
      if (!same || it->second.kept) continue;
      if (!stats[j].stat) {
        held_.erase(it);
        continue;
      }
      it->second.expire_at = sent_at + requests[i].ttl;
      sooner = sooner || it->second.expire_at < timer_wake_;
      out[i].renewal = {LeaseStatus::ok, grants[j]};
    }
    lock.unlock();
    if (sooner) cv_.notify_all();
  }
}

LeaseStatus Core::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  auto h = held(lease.owner);
  if (!h || h->czxid != static_cast<std::int64_t>(lease.fencing_token)) return LeaseStatus::lost;
  if (keep_for.count() > 0) {
    const bool ours = session_.stat_own(h->path, h->czxid, h->generation, deadline).has_value();
    bool sooner = false;
    {
      std::lock_guard lock(mu_);
      auto it = held_.find(lease.owner);
      if (it == held_.end() || it->second.czxid != h->czxid) return LeaseStatus::lost;
      if (!ours) {
        held_.erase(it);
        return LeaseStatus::lost;
      }
      it->second.expire_at = steady_now() + keep_for;
      it->second.kept = true;
      sooner = it->second.expire_at < timer_wake_;
    }
    if (sooner) cv_.notify_all();
    return LeaseStatus::ok;
  }
  bool last = false;
  {
    std::lock_guard lock(mu_);
    auto it = held_.find(lease.owner);
    if (it == held_.end() || it->second.czxid != h->czxid) return LeaseStatus::lost;
    held_.erase(it);
    last = held_.empty();
  }
  if (last) cv_.notify_all();  // a closing Core's timer ends with its last lease
  try {
    return session_.remove_own(h->path, h->czxid, h->generation, deadline) ? LeaseStatus::ok
                                                                           : LeaseStatus::lost;
  } catch (const BackendError&) {
    add_orphan({h->path, lease.owner, false, h->generation, 0, h->czxid});
    throw;
  }
}

void Core::withdraw(const std::string& path, std::int64_t czxid, const std::string& owner,
                    std::uint64_t generation, Deadline deadline) {
  try {
    session_.remove_own(path, czxid, generation, deadline);
  } catch (const BackendError&) {
    add_orphan({path, owner, false, generation, 0, czxid});
  }
}

void Core::add_orphan(Orphan orphan) {
  {
    std::lock_guard lock(mu_);
    orphans_.push_back(std::move(orphan));
  }
  cv_.notify_all();
}

}  // namespace leader::zookeeper
