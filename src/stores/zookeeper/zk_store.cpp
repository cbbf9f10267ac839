#include "zk_store.hpp"

#include <algorithm>
#include <set>

#include "leader/errors.hpp"
#include "zk_data.hpp"

namespace leader::zookeeper {
namespace {

TimePoint steady_now() { return std::chrono::steady_clock::now(); }

}  // namespace

ZooKeeperStore::ZooKeeperStore(Config config) : config_(config), sessions_(std::move(config)) {}

ZooKeeperStore::~ZooKeeperStore() = default;

std::string ZooKeeperStore::lock_dir(std::string_view lock) const {
  return config_.root + "/" + std::string(lock);
}

Acquired ZooKeeperStore::try_acquire(const LeaseRequest& request, Deadline deadline) {
  return sessions_.acquire(request, lock_dir(request.lock), deadline);
}

void ZooKeeperStore::leave_line(const LeaseRequest& request, Deadline deadline) noexcept {
  if (request.slots >= 1 || !request.wait_in_line) return;
  try {
    for (const auto& core : sessions_.all())
      if (auto place = core->leave_line(request.owner))
        core->withdraw(place->path, place->czxid, request.owner, place->generation, deadline);
  } catch (...) {  // allocation failure at worst; the node then ends with its session
  }
}

Renewal ZooKeeperStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  auto core = Core::holding(lease.owner);  // only the owning session can confirm a lease
  return core ? core->renew(lease, ttl, deadline) : Renewal{};
}

std::vector<BatchRenewal> ZooKeeperStore::renew_batch(std::span<const RenewalRequest> requests,
                                                      Deadline deadline) {
  std::vector<BatchRenewal> out(requests.size());
  // Only the owning session can confirm a lease: group by it (a lease no Core holds is lost).
  std::vector<std::pair<std::shared_ptr<Core>, std::vector<std::size_t>>> groups;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    auto core = Core::holding(requests[i].lease->owner);
    if (!core) continue;
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const auto& group) { return group.first == core; });
    if (g == groups.end()) g = groups.insert(groups.end(), {core, {}});
    g->second.push_back(i);
  }
  for (const auto& [core, indices] : groups) core->renew_batch(requests, indices, deadline, out);
  return out;
}

LeaseStatus ZooKeeperStore::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  if (auto core = Core::holding(lease.owner)) return core->release(lease, keep_for, deadline);
  return release_untracked(lease, keep_for, deadline);
}

// A lease of another session (another process, or a store of this process that closed its
// session): find the node by owner token and delete it, checking the fencing token first. The
// lease's own timer or session ends it no earlier than any keep_for, so keep_for keeps it.
LeaseStatus ZooKeeperStore::release_untracked(const Lease& lease, Duration keep_for,
                                              Deadline deadline) {
  const std::string dir = lock_dir(lease.lock);
  std::string path;
  if (lease.slots >= 1) {
    path = dir + "/slot-" + std::to_string(lease.slot);
  } else {
    Reply kids = session().children(dir, deadline);
    const std::string prefix = lease.owner + "__lock__";
    for (const auto& c : kids.children)
      if (c.starts_with(prefix))
        path = dir + "/" + c;  // NOLINT(performance-inefficient-string-concatenation)
    if (path.empty()) return LeaseStatus::lost;
  }
  Reply r = session().get(path, deadline);
  if (r.rc != kOk || r.stat.czxid != static_cast<std::int64_t>(lease.fencing_token))
    return LeaseStatus::lost;
  if (recorded_owner(r.value) != lease.owner) return LeaseStatus::lost;
  if (keep_for.count() > 0) return LeaseStatus::ok;
  return session().remove(path, r.stat.version, deadline).rc == kOk ? LeaseStatus::ok
                                                                    : LeaseStatus::lost;
}

LockState ZooKeeperStore::inspect(std::string_view lock, Deadline deadline) {
  LockState state;
  state.lock = std::string(lock);
  const std::string dir = lock_dir(lock);
  Reply kids = session().children(dir, deadline);
  if (kids.rc == kNoNode) return state;
  holders_of(dir, kids.children, deadline, state);
  return state;
}

std::vector<LockState> ZooKeeperStore::list_locks(std::string_view prefix, Deadline deadline) {
  Reply kids = session().children(config_.root, deadline);
  if (kids.rc == kNoNode) return {};  // nothing was ever locked under this root
  if (kids.rc != kOk) session().fail(kids.rc, "list " + config_.root);
  std::set<std::string> names;
  for (const auto& child : kids.children)
    if (child.compare(0, prefix.size(), prefix) == 0) names.insert(child);
  return detail::held_locks(*this, names, deadline);
}

void ZooKeeperStore::holders_of(const std::string& dir, const std::vector<std::string>& children,
                                Deadline deadline, LockState& out) {
  std::vector<std::pair<std::string, int>> nodes;  // name, slot
  auto contenders = sorted_contenders(children);
  if (!contenders.empty()) nodes.emplace_back(contenders.front().name, 0);
  for (const auto& c : children)
    if (auto slot = slot_index(c)) nodes.emplace_back(c, *slot);
  std::vector<Pending> pending;
  pending.reserve(nodes.size());
  const std::string parent = dir + "/";
  for (const auto& [name, slot] : nodes)
    pending.push_back(session().get_async(parent + name, deadline));
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    Reply r = pending[i].wait(deadline, "get " + dir + "/" + nodes[i].first);
    if (r.rc != kOk) continue;  // released meanwhile
    Holder h;
    h.fencing_token = static_cast<std::uint64_t>(r.stat.czxid);
    h.slot = nodes[i].second;
    h.expires_in = session().negotiated_timeout();
    read_holder_data(r.value, nodes[i].first, h);
    if (auto core = Core::holding(h.owner); core)
      if (auto mine = core->held(h.owner); mine && mine->czxid == r.stat.czxid)
        h.expires_in = std::max(
            Duration(0), std::chrono::duration_cast<Duration>(mine->expire_at - steady_now()));
    out.holders.push_back(std::move(h));
  }
  std::sort(out.holders.begin(), out.holders.end(),
            [](const Holder& a, const Holder& b) { return a.slot < b.slot; });
}

}  // namespace leader::zookeeper
