#pragma once
// The insides of a Session that session.cpp (requests), own_nodes.cpp (renewal watches) and
// watch.cpp (watches) share: the state of a request in flight, one zhandle_t with its session
// state, and the watches armed on that handle. Private to the client.

#include <zookeeper/zookeeper.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "session.hpp"

namespace leader::zookeeper {

inline constexpr const char* kStore = "zookeeper";  ///< the store's name in its errors

// NodeCode names ZooKeeper's own codes: a reply's rc is handed over unchanged.
static_assert(int{kOk} == ZOK && int{kNoNode} == ZNONODE && int{kBadVersion} == ZBADVERSION &&
              int{kNoChildrenForEphemerals} == ZNOCHILDRENFOREPHEMERALS &&
              int{kNodeExists} == ZNODEEXISTS && int{kNotEmpty} == ZNOTEMPTY);

/// Node-level outcomes, returned in Reply::rc; any other code is a connection-level failure.
inline bool is_node_level(int rc) {
  return rc == ZOK || rc == ZNONODE || rc == ZNODEEXISTS || rc == ZBADVERSION || rc == ZNOTEMPTY ||
         rc == ZNOCHILDRENFOREPHEMERALS;
}

/// A Reply of code `rc` with `stat`'s fields, if given.
inline Reply reply_of(int rc, const struct Stat* stat) {
  Reply r;
  r.rc = rc;
  if (stat != nullptr)
    r.stat = {stat->czxid, stat->mzxid,   stat->ctime,
              stat->mtime, stat->version, stat->ephemeralOwner};
  return r;
}

struct Pending::State {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Reply reply;
  std::shared_ptr<void> buffers;  ///< what the C client writes into until the completion runs
  std::uint64_t epoch = 0;        ///< a renewal probe's: Handle::epoch when its reply was handled

  /// Called once by the completion: fills the reply and wakes the waiter.
  template <class Fill>
  void finish(Fill fill) {
    {
      std::lock_guard lock(mu);
      fill(reply);
      done = true;
    }
    cv.notify_all();
  }
};

/// One watch context handed to the C client (zoo_awget_children / zoo_awexists). Its Handle owns
/// it for as long as the C client may call it; waiters share it.
struct Watch::State {
  Session::Handle* handle = nullptr;  ///< outlives every callback: zookeeper_close joins them
  std::string key;                    ///< "c" (children) or "e" (exists) + the path
  bool fired = false;                 ///< under handle->mu: an event (node or session) came
};

struct Session::Handle {
  zhandle_t* zh = nullptr;
  std::uint64_t generation = 0;  ///< of the Session, when this handle was made
  std::mutex mu;
  std::condition_variable cv;  ///< session state changes and watch events
  int state = 0;
  int negotiated_ms = 0;  ///< zoo_recv_timeout() read when the session (re)connected; 0 before
  bool expired = false;
  bool auth_failed = false;
  /// Watches set on the server and not fired yet, by Watch::State::key: a new waiter on the same
  /// path joins one instead of leaving another context behind (under mu).
  std::map<std::string, std::shared_ptr<Watch::State>> armed;
  /// Every context the C client may still call (under mu). A node event unregisters its watch;
  /// a session event does not (the C client calls every active watcher with it and keeps them),
  /// and zookeeper_close frees its watcher lists without calling them: what is left here then is
  /// freed with the Handle, after zookeeper_close returned.
  std::map<const Watch::State*, std::shared_ptr<Watch::State>> watches;
  /// Connection epoch: bumped by every session event (connecting, connected, expired, ...), under
  /// mu. The C client queues session events, watch events and replies on one completion queue in
  /// the order its I/O thread read them (own_nodes.cpp), so two replies handled at the same epoch
  /// came over one connection, with every watch event the server sent between them in between.
  std::uint64_t epoch = 0;
  /// A held node's renewal watch (own_nodes.cpp): a data watch set by a get of the node, whose C
  /// client context is only the watch's id (never a pointer), looked up here by on_own_watch.
  struct OwnWatch {
    std::int64_t czxid = 0;   ///< of the held node it watches
    int pending = 0;          ///< arming gets in flight
    bool registered = false;  ///< the C client holds it: set by a ZOK get, cleared by a node event
    /// The last arming get's reply showed the node as ours (czxid, our session as ephemeralOwner)
    /// and no node event came since.
    bool verified = false;
    std::uint64_t epoch = 0;  ///< `epoch` when the last arming get's reply was handled
  };
  /// By watch id (under mu). An entry exists while the C client may call its id (registered, or
  /// an arming get in flight) and is erased when neither holds: a node event with no arming in
  /// flight, or an arming get that did not register. A missing entry reads as "not verified".
  std::unordered_map<std::uint64_t, OwnWatch> own_watches;
  std::uint64_t next_own_watch = 0;  ///< the last id handed out (under mu); ids are never reused

  Handle() = default;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (zh != nullptr) zookeeper_close(zh);  // joins the C client's threads: no callback after it
  }
  /// Whether `ephemeral_owner` is this handle's session.
  bool owns(std::int64_t ephemeral_owner) const {
    const clientid_t* id = zoo_client_id(zh);
    return id != nullptr && ephemeral_owner == id->client_id;
  }
};

}  // namespace leader::zookeeper
