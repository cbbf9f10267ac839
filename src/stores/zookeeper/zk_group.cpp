// Group leases: slot i of lock L is the ephemeral node <root>/L/slot-<i>; creating it is the
// atomic claim (create-if-absent), so at most N holders exist and a slot index is stable while
// it is held. The fencing token is the slot node's czxid.

#include <zookeeper/zookeeper.h>

#include <set>

#include "leader/errors.hpp"
#include "zk_store.hpp"

namespace leader::detail::zk {

Acquired ZooKeeperStore::acquire_slot(const LeaseRequest& request, Deadline deadline) {
  const std::string dir = lock_dir(request.lock);
  auto core = core_for(request.ttl, deadline);
  Session& session = core->session();
  const std::uint64_t generation = session.generation();
  std::set<std::string> taken;
  Reply kids = session.children(dir, deadline);
  if (kids.rc == ZOK) taken.insert(kids.children.begin(), kids.children.end());
  for (int slot = 0; slot < request.slots; ++slot) {
    const std::string name = "slot-" + std::to_string(slot);
    if (taken.count(name) != 0) continue;
    std::string path = dir;
    path.append("/").append(name);
    const TimePoint sent_at = std::chrono::steady_clock::now();
    Reply created;
    try {
      created =
          create_in(session, dir, path, node_data(request, slot, *core), ZOO_EPHEMERAL, deadline);
    } catch (const BackendError&) {  // the slot may be ours without us knowing
      core->add_orphan({path, request.owner, false, generation});
      throw;
    }
    if (created.rc == ZOK)
      return {core->track(request, path, created.stat, slot, sent_at, generation)};
  }
  return {};
}

}  // namespace leader::detail::zk
