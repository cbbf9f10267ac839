// Group leases: slot i of lock L is the ephemeral node <root>/L/slot-<i>. A claim is one multi:
// setData of the lock directory to {"slots": N} with the version read before (so every claim is
// ordered after the listing it was chosen from, and a size is only replaced while no slot is
// held) and create-if-absent of the slot. At most N holders exist, a slot index is stable while
// held, and all holders share one N. The fencing token is the slot node's czxid.

#include <nlohmann/json.hpp>
#include <set>

#include "leader/errors.hpp"
#include "zk_core.hpp"

namespace leader::zookeeper {

Acquired Core::acquire_slot(const LeaseRequest& request, const std::string& dir,
                            Deadline deadline) {
  for (const auto& path : orphans_of(request.owner))  // an attempt whose reply was lost
    if (auto slot = slot_index(path.substr(path.rfind('/') + 1));
        slot && path == dir + "/slot-" + std::to_string(*slot) && *slot < request.slots)
      if (auto mine = adopt(request, path, node_data(request, *slot), *slot, deadline))
        return {std::move(mine)};
  const std::string shape = nlohmann::json{{"slots", request.slots}}.dump();
  // Every claim bumps the directory's version, so of the claims sent against one version only
  // the first succeeds. A claim lost to another claim means one more holder since our listing:
  // after `slots` such races the group was filled by others since we looked, and the attempt
  // answers "held" (the elector waits and tries again while its wait_time lasts): unbounded, a
  // busy group could keep one attempt racing past the local deadline of the lease it finally
  // got. k <= N claimants arriving at once all get in: the i-th one to win lost i - 1 races.
  int lost_races = 0;
  while (true) {  // each round lost a race to another claim; bounded by lost_races and the deadline
    auto [meta, listed] = session_.get_and_list(dir, dir, deadline);
    if (meta.rc == kNoNode) {
      session_.ensure_path(dir, deadline);
      continue;
    }
    refuse_other_shape(request, meta, listed.children);
    const std::set<std::string> taken(listed.children.begin(), listed.children.end());
    int slot = 0;
    while (slot < request.slots && taken.count("slot-" + std::to_string(slot)) != 0) ++slot;
    if (slot == request.slots) return {};
    const std::string path = dir + "/slot-" + std::to_string(slot);
    std::uint64_t generation = 0;  // the session the claim goes out on, named by the call
    const TimePoint sent_at = std::chrono::steady_clock::now();
    std::pair<Reply, Reply> r;
    try {
      r = session_.set_create_and_list(dir, shape, meta.stat.version, path,
                                       node_data(request, slot), CreateMode::ephemeral, deadline,
                                       &generation);
    } catch (const BackendError&) {  // the slot may be ours without us knowing
      add_orphan({path, request.owner, false, generation});
      throw;
    }
    if (r.first.rc == kBadVersion || r.first.rc == kNodeExists) {
      if (++lost_races >= request.slots) return {};
      continue;
    }
    if (r.first.rc == kNoNode) continue;  // the directory went (an empty lock's clean-up)
    if (r.first.rc != kOk) session_.fail(r.first.rc, "claim " + path);
    NodeStat stat = r.first.stat;
    stat.czxid = stat.mzxid;  // one multi, one zxid: the slot's creation
    if (!sorted_contenders(r.second.children).empty()) {  // a single leader came in meanwhile
      withdraw(path, stat.czxid, request.owner, generation, deadline);
      refuse(request, 0);
    }
    return {track(request, path, stat, slot, sent_at, generation)};
  }
}

}  // namespace leader::zookeeper
