// Watches of a Session over the C client's asynchronous watch API. Relied on, from the Programmer's
// Guide ("ZooKeeper Watches"): a watch fires once, at the first change after the read that set it;
// one session's requests are answered in order, so a read sent after a watch was set sees every
// change that does not fire it; a session event reaches every active watcher. Lifetime: the
// context given to the C client (Watch::State) is owned by its Session::Handle until a node event
// unregistered it or zookeeper_close joined the client's threads.

#include <zookeeper/zookeeper.h>

#include "handle.hpp"
#include "leader/errors.hpp"
#include "session.hpp"

namespace leader::zookeeper {
namespace {

std::string watch_key(bool exists, const std::string& path) { return (exists ? "e" : "c") + path; }

// Marks `w` fired and, when `forget`, drops the Handle's ownership of it (the C client will not
// call it again). The last reference may go here: released outside the lock.
void fire(Watch::State& w, bool forget) {
  Session::Handle& h = *w.handle;
  std::shared_ptr<Watch::State> last;
  {
    std::lock_guard lock(h.mu);
    w.fired = true;
    if (auto it = h.armed.find(w.key); it != h.armed.end() && it->second.get() == &w)
      h.armed.erase(it);
    if (forget)
      if (auto it = h.watches.find(&w); it != h.watches.end()) {
        last = std::move(it->second);
        h.watches.erase(it);
      }
  }
  h.cv.notify_all();
}

// The watcher of every armed watch. A node event (created, deleted, changed, child) unregistered
// the watch in the C client: it will not call this context again. A session event leaves it
// registered; it only wakes the waiters, who re-read once the session answers.
void on_watch_event(zhandle_t* /*zh*/, int type, int /*state*/, const char* /*path*/, void* ctx) {
  if (ctx == nullptr) return;
  fire(*static_cast<Watch::State*>(ctx), type != ZOO_SESSION_EVENT);
}

// One arming read in flight: its reply and its watch.
struct Arm {
  std::shared_ptr<Pending::State> reply;
  std::shared_ptr<Watch::State> watch;
};

// Runs on the completion thread before any event of the watch. The C client registers a child
// watch only on ZOK and an exists watch on ZOK or ZNONODE; otherwise this context is never
// called: it is freed, and waiters that joined it wake and arm again.
template <class Fill>
void settle(const void* data, bool registered, Fill fill) {
  std::unique_ptr<Arm> arm(static_cast<Arm*>(const_cast<void*>(data)));
  if (!registered) fire(*arm->watch, true);
  arm->reply->finish(fill);
}

void on_armed_children(int rc, const struct String_vector* strings, const void* data) {
  settle(data, rc == ZOK, [&](Reply& r) {
    r.rc = rc;
    if (strings == nullptr) return;
    for (int i = 0; i < strings->count; ++i) r.children.emplace_back(strings->data[i]);
  });
}

void on_armed_exists(int rc, const struct Stat* stat, const void* data) {
  settle(data, rc == ZOK || rc == ZNONODE, [&](Reply& r) {
    r.rc = rc;
    if (stat != nullptr) r.stat.czxid = stat->czxid;
  });
}

}  // namespace

// A read that sets a new watch on `path` (children, or exists when `exists`). Once sent, the
// watch is listed in h->armed, so that a later waiter on the same path joins it: its own read,
// sent after this one on the same session, is answered after the watch was set.
std::pair<Reply, Watch> Session::arm(const std::shared_ptr<Handle>& h, const std::string& path,
                                     bool exists, Deadline deadline) {
  const std::string what = (exists ? "exists " : "list ") + path;
  auto watch = std::make_shared<Watch::State>();
  watch->handle = h.get();
  watch->key = watch_key(exists, path);
  {
    std::lock_guard lock(h->mu);
    h->watches[watch.get()] = watch;
  }
  auto reply = std::make_shared<Pending::State>();
  auto* call = new Arm{reply, watch};
  int rc =
      exists ? zoo_awexists(h->zh, path.c_str(), on_watch_event, watch.get(), on_armed_exists, call)
             : zoo_awget_children(h->zh, path.c_str(), on_watch_event, watch.get(),
                                  on_armed_children, call);
  if (rc == ZBADARGUMENTS || rc == ZINVALIDSTATE) {  // not queued: no completion, no watcher
    delete call;
    fire(*watch, true);
  }
  if (rc == ZOK) {
    std::lock_guard lock(h->mu);
    if (!watch->fired) h->armed[watch->key] = watch;
  }
  Reply r = finish(rc, reply, deadline, what);
  return {std::move(r), Watch(h, std::move(watch), config_.shown)};
}

// A read of `path` (children, or exists when `exists`) that leaves a watch on it: joins the watch
// already armed there (this read is sent after the one that set it) or arms a new one.
std::pair<Reply, Watch> Session::read_watched(const std::shared_ptr<Handle>& h,
                                              const std::string& path, bool exists,
                                              Deadline deadline) {
  std::shared_ptr<Watch::State> joined;
  {
    std::lock_guard lock(h->mu);
    if (auto it = h->armed.find(watch_key(exists, path)); it != h->armed.end()) joined = it->second;
  }
  if (!joined) return arm(h, path, exists, deadline);
  Reply r = exists ? this->exists(path, deadline) : children(path, deadline);
  return {std::move(r), Watch(h, std::move(joined), config_.shown)};
}

std::pair<Reply, Watch> Session::watch_children(const std::string& dir, Deadline deadline) {
  for (;;) {
    check_time(deadline, "watch " + dir);
    auto h = ready_handle(deadline);
    auto listed = read_watched(h, dir, false, deadline);
    if (listed.first.rc != ZNONODE) return listed;
    // No lock directory yet (no child watch was set): watch for its creation instead.
    auto created = read_watched(h, dir, true, deadline);
    if (created.first.rc == ZNONODE) return {std::move(listed.first), std::move(created.second)};
  }  // created meanwhile: list it with a child watch
}

std::pair<Reply, Watch> Session::watch_exists(const std::string& path, Deadline deadline) {
  check_time(deadline, "watch " + path);
  return read_watched(ready_handle(deadline), path, true, deadline);
}

Watch::Woken Watch::wait(Deadline deadline, const std::stop_token& stop) {
  Session::Handle& h = *handle_;
  // Before the lock: a stop already requested runs the callback here, and it takes the lock.
  std::stop_callback wake(stop, [&h] {
    { std::lock_guard lock(h.mu); }
    h.cv.notify_all();
  });
  std::unique_lock lock(h.mu);
  const auto answers = [&] { return h.state == ZOO_CONNECTED_STATE || h.expired || h.auth_failed; };
  h.cv.wait_until(lock, deadline.at(),
                  [&] { return stop.stop_requested() || (state_->fired && answers()); });
  if (stop.stop_requested()) return Woken::stopped;
  if (state_->fired && answers()) return Woken::fired;
  if (state_->fired)
    throw BackendError(ErrorCode::unavailable, kStore,
                       "not connected to '" + shown_ + "' before the deadline");
  return Woken::deadline;
}

}  // namespace leader::zookeeper
