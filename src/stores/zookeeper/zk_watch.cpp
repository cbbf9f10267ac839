// The store's watches (ZooKeeperStore::watch, the LockWatcher capability, and wait_turn) over the
// session's watch_children / watch_exists (src/clients/zookeeper/watch.cpp).

#include "leader/lock_watching.hpp"
#include "leader/names.hpp"
#include "zk_store.hpp"

namespace leader::zookeeper {

LockState ZooKeeperStore::watch(std::string_view lock, const LockState& last_seen,
                                Deadline deadline, const std::stop_token& stop) {
  validate_lock_name(lock);  // not behind leader::open()'s checks: lock_watcher() looks through
  const std::string dir = lock_dir(lock);
  for (;;) {
    // The holders are the lowest contender and the slot-<i> nodes, named by the children, with a
    // czxid and owner fixed at their creation: a child watch sees every change of them.
    LockState now;
    now.lock = std::string(lock);
    auto [listed, armed] = session().watch_children(dir, deadline);
    if (listed.rc == kOk) holders_of(dir, listed.children, deadline, now);
    if (!same_holders(now, last_seen)) return now;
    // Read after arming: a change between `now` and the wait has fired the watch already.
    if (armed.wait(deadline, stop) != Watch::Woken::fired || deadline.expired()) return now;
  }
}

// Waiting in line (README.md "Waiting in line"): an exists watch on the node just ahead of
// ours, so a hand-over wakes only the next waiter (kazoo's and Curator's recipe), not every
// waiter's child watch.
std::optional<bool> ZooKeeperStore::wait_turn(const LeaseRequest& request, Deadline deadline,
                                              const std::stop_token& stop) {
  if (request.slots >= 1 || !request.wait_in_line) return std::nullopt;
  for (const auto& core : sessions_.all()) {
    auto place = core->place_of(request.owner);
    if (!place) continue;
    if (place->ahead.empty()) return std::nullopt;
    auto [seen, armed] = core->session().watch_exists(place->ahead, deadline);
    if (seen.rc == kNoNode) return true;  // gone already: our turn may have come
    return armed.wait(deadline, stop) == Watch::Woken::fired;
  }
  return std::nullopt;
}

}  // namespace leader::zookeeper
