// The store's own timer thread: deletes a lease's node when its ttl passes without renewal (the
// session alone would keep it while the process lives), deletes kept nodes once keep_for has
// passed (min_lease_time), and removes orphaned nodes left by calls whose outcome is unknown.

#include "leader/errors.hpp"
#include "zk_core.hpp"
#include "zk_data.hpp"

namespace leader::zookeeper {
namespace {

constexpr Duration kStepTimeout{2000};  // bound of each timer-thread request
constexpr Duration kOrphanRetry{500};   // pause between orphan sweeps while some remain
// An orphan is retried for as long as the session that created it lives: its node goes only with
// a delete or with that session, and the session of a live process never ends by itself (a sweep
// that gave up left a ghost blocking the lock until its process exited).

}  // namespace

void Core::timer_loop() {
  std::unique_lock lock(mu_);
  TimePoint next_sweep{};
  while (!(closing_ && held_.empty())) {
    const TimePoint now = std::chrono::steady_clock::now();
    std::vector<Held> due;
    TimePoint next = now + std::chrono::hours(1);
    for (auto it = held_.begin(); it != held_.end();) {
      if (it->second.expire_at <= now) {
        due.push_back(it->second);
        it = held_.erase(it);
      } else {
        next = std::min(next, it->second.expire_at);
        ++it;
      }
    }
    std::vector<Orphan> orphans;
    if (!orphans_.empty() && (now >= next_sweep || sweep_now_) && session_.connected()) {
      sweep_now_ = false;
      orphans.swap(orphans_);
      sweeping_ = orphans;  // still visible to a retried acquisition of the same owner
      next_sweep = now + kOrphanRetry;
    }
    if (!due.empty() || !orphans.empty()) {
      lock.unlock();
      delete_due(due);
      sweep(std::move(orphans));
      lock.lock();
      sweeping_.clear();
      cv_.notify_all();
      continue;
    }
    if (!orphans_.empty()) next = std::min(next, std::max(next_sweep, now + Duration(50)));
    if (sweep_now_ && !orphans_.empty()) next = std::min(next, now + Duration(50));  // connecting
    timer_wake_ = next;
    cv_.wait_until(lock, next);
    timer_wake_ = TimePoint::min();
  }
  // Nothing is held and the store is gone: drop the last reference, which closes the session
  // (and with it any orphaned ephemeral node).
  std::shared_ptr<Core> me = std::move(self_);
  lock.unlock();
  me.reset();
}

void Core::delete_due(const std::vector<Held>& due) {
  for (const auto& h : due)  // only the node its session created (a slot path can be reused)
    withdraw(h.path, h.czxid, "", h.generation, Deadline::after(kStepTimeout));
}

// Deletes an orphan with a version check, on the session that created it only, unless it is not
// the owner's or is tracked again (an acquisition of the same owner adopted it). While an
// acquisition of the owner is under way the node is left for later: it may be the one that
// acquisition just created or is adopting (an adoption bumps the version, so a delete checked
// against the version read here fails once the adoption has begun writing).
bool Core::remove_orphan(const Orphan& o, Deadline deadline) {
  bool later = false;
  session_.remove_own(o.path, o.czxid, o.generation, deadline, [&](const Reply& r) {
    if (!o.owner.empty() && recorded_owner(r.value) != o.owner) return false;
    std::lock_guard lock(mu_);
    if (!o.owner.empty() && acquiring_.count(o.owner) != 0) {
      later = true;
      return false;
    }
    for (const auto& [owner, h] : held_)  // a lease that is tracked again is not an orphan
      if (h.path == o.path) return false;
    for (const auto& [owner, w] : waiting_)  // nor is a waiter's place in line
      if (w.path == o.path) return false;
    return true;
  });
  return !later;
}

bool Core::acquiring(const std::string& owner) {
  std::lock_guard lock(mu_);
  return acquiring_.count(owner) != 0;
}

void Core::sweep(std::vector<Orphan> orphans) {
  std::vector<Orphan> again;
  for (auto& o : orphans) {
    if (o.generation != session_.generation()) continue;  // its ephemeral nodes are gone
    try {
      const Deadline deadline = Deadline::after(kStepTimeout);
      std::vector<Orphan> nodes;
      if (o.scan && acquiring(o.owner)) {  // after that acquisition
        again.push_back(std::move(o));
        continue;
      }
      if (o.scan) {  // the lock's nodes named after the owner, deleted in this same round
        Reply kids = session_.children(o.path, deadline);
        for (const auto& c : kids.children)
          if (c.starts_with(o.owner))
            nodes.push_back(Orphan{o.path + "/" + c, o.owner, false, o.generation, o.attempts, 0});
      } else {
        nodes.push_back(o);
      }
      for (auto& n : nodes) {
        try {
          if (!remove_orphan(n, deadline)) again.push_back(std::move(n));
        } catch (const BackendError&) {
          ++n.attempts;
          again.push_back(std::move(n));
        }
      }
    } catch (const BackendError&) {
      ++o.attempts;
      again.push_back(std::move(o));
    }
  }
  if (again.empty()) return;
  std::lock_guard lock(mu_);
  for (auto& o : again) orphans_.push_back(std::move(o));
}

}  // namespace leader::zookeeper
