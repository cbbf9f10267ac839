// Session-level renewal of held nodes (Session::renew_own_batch; README.md, "Batched renewals").
// Each held node carries a one-shot data watch, set by a get of the node on the session that
// created it. While that watch is armed, verified (the get that set it showed our node) and has
// not fired, and the connection has not changed since, one probe (an exists of "/") on the session
// renews every such node at once; a node whose watch fired, or was never armed, or was armed on an
// earlier connection, is read again on its own, which also re-arms its watch.
//
// Why one probe proves each of these nodes as an exists of the node would:
//  * The session: the probe is answered on the session, so it was alive when the probe arrived,
//    after the caller's `sent` stamp (the same proof as a per-node read).
//  * The node: "the node is ours" holds from its creation until it is deleted, and never again
//    (a czxid is never reused); a data change or a deletion applied by the server after the read
//    that set the watch sends the watch's event on that connection. The server sends a
//    connection's events and replies in the order it applied them (standalone: one request
//    pipeline, PrepRequestProcessor -> SyncRequestProcessor -> FinalRequestProcessor; a quorum
//    member's CommitProcessor applies a commit only with no read in flight, `waitForEmptyPool()`
//    in quorum/CommitProcessor.java), and the C client hands them to its completion thread in the
//    order its I/O thread read them: zookeeper_process() (zookeeper.c) queues a watch event
//    (WATCHER_EVENT_XID, after collectWatchers() unregistered its watchers) and a reply (after
//    activateWatcher() registered the reply's watch) on the same `completions_to_process` queue,
//    and process_completions() runs that queue in order on the one completion thread
//    (mt_adaptor.c, do_completion); session events go on the same queue (queue_session_event).
//    So when the probe's reply is handled, every event of a change applied before the server
//    answered the probe has been handled already. If the read that set the watch and the probe
//    were answered on the same connection (the same epoch: every session event bumps it, and a
//    connection's replies come between two session events) and no event came, the node was ours
//    when the probe was answered. Any session event in between (a reconnection: the C client
//    re-sets watches with SetWatches, whose events are not relied on) makes the node unverified.
//
// Watch contexts: the C client is given only the watch's id (an integer, never a pointer) and
// calls back with it; on_own_watch looks it up in the handle's `own_watches` and ignores an id it
// does not find. The handle is the zhandle's own context and outlives every callback
// (zookeeper_close joins the client's threads). zk_handle.hpp, Session::Handle::OwnWatch.

#include <zookeeper/zookeeper.h>

#include <cstdint>
#include <memory>
#include <thread>

#include "leader/errors.hpp"
#include "zk_handle.hpp"
#include "zk_session.hpp"

namespace leader::zookeeper {
namespace {

constexpr const char* kStore = "zookeeper";
constexpr const char* kProbePath = "/";  // the chroot with one: always there, no ACL on exists

using OwnWatch = Session::Handle::OwnWatch;

void* context_of(std::uint64_t id) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(id));  // NOLINT: an id, not a pointer
}

std::uint64_t id_of(const void* ctx) {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(ctx));  // NOLINT: see above
}

// Under h.mu: forgets the entry once the C client can no longer call its id.
void settle(Session::Handle& h, std::unordered_map<std::uint64_t, OwnWatch>::iterator it) {
  if (!it->second.registered && it->second.pending == 0) h.own_watches.erase(it);
}

// The watcher of every renewal watch. A node event (deleted, data changed) unregistered the id in
// the C client for that path; a session event leaves it registered (the epoch stands for it).
void on_own_watch(zhandle_t* zh, int type, int /*state*/, const char* /*path*/, void* ctx) {
  if (type == ZOO_SESSION_EVENT) return;
  auto* h = static_cast<Session::Handle*>(const_cast<void*>(zoo_get_context(zh)));
  if (h == nullptr) return;
  std::lock_guard lock(h->mu);
  auto it = h->own_watches.find(id_of(ctx));
  if (it == h->own_watches.end()) return;
  it->second.registered = false;
  it->second.verified = false;
  settle(*h, it);
}

// One arming get in flight.
struct ArmCall {
  std::shared_ptr<Pending::State> reply;
  Session::Handle* handle = nullptr;  // outlives every completion: zookeeper_close joins them
  std::uint64_t id = 0;
};

// Runs on the completion thread, in order with the watch's events: the C client registered the
// watch (a data watch: on ZOK only) before queueing this reply.
void on_armed_get(int rc, const char* /*value*/, int /*len*/, const struct Stat* stat,
                  const void* data) {
  std::unique_ptr<ArmCall> call(static_cast<ArmCall*>(const_cast<void*>(data)));
  Session::Handle& h = *call->handle;
  {
    std::lock_guard lock(h.mu);
    if (auto it = h.own_watches.find(call->id); it != h.own_watches.end()) {
      OwnWatch& w = it->second;
      --w.pending;
      if (rc == ZOK) {
        const clientid_t* id = zoo_client_id(h.zh);
        w.registered = true;
        w.verified = stat != nullptr && stat->czxid == w.czxid && id != nullptr &&
                     stat->ephemeralOwner == id->client_id;
        w.epoch = h.epoch;
      }
      settle(h, it);
    }
  }
  call->reply->finish([&](Reply& r) {
    r.rc = rc;
    if (stat != nullptr)
      r.stat = NodeStat{stat->czxid, stat->mzxid,   stat->ctime,
                        stat->mtime, stat->version, stat->ephemeralOwner};
  });
}

// The probe in flight.
struct ProbeCall {
  std::shared_ptr<Pending::State> reply;
  Session::Handle* handle = nullptr;
};

void on_probe(int rc, const struct Stat* /*stat*/, const void* data) {
  std::unique_ptr<ProbeCall> call(static_cast<ProbeCall*>(const_cast<void*>(data)));
  std::uint64_t epoch = 0;
  {
    std::lock_guard lock(call->handle->mu);
    epoch = call->handle->epoch;
  }
  auto& st = *call->reply;
  st.finish([&](Reply& r) {
    r.rc = rc;
    st.epoch = epoch;
  });
}

bool is_node_level(int rc) {
  return rc == ZOK || rc == ZNONODE || rc == ZNODEEXISTS || rc == ZBADVERSION || rc == ZNOTEMPTY ||
         rc == ZNOCHILDRENFOREPHEMERALS;
}

// Waits for `st` until `deadline`; false when no reply came.
bool wait_reply(Pending::State& st, Deadline deadline, Reply& out, std::uint64_t* epoch = nullptr) {
  std::unique_lock lock(st.mu);
  if (!st.cv.wait_until(lock, deadline.at(), [&] { return st.done; })) return false;
  out = std::move(st.reply);
  if (epoch != nullptr) *epoch = st.epoch;
  return true;
}

}  // namespace

std::vector<Session::OwnStat> Session::renew_own_batch(std::vector<OwnNode>& nodes,
                                                       std::uint64_t generation,
                                                       Deadline deadline) {
  std::vector<OwnStat> out(nodes.size());
  std::vector<std::size_t> todo(nodes.size());
  for (std::size_t i = 0; i < todo.size(); ++i) todo[i] = i;
  const auto no_reply = [&](const std::string& what) {
    return BackendError(
        ErrorCode::deadline_exceeded, kStore,
        what + " on '" + config_.shown + "': no reply before the deadline (outcome unknown)");
  };
  bool after_loss = false;  // some request's connection was lost: give the client a moment
  while (!todo.empty()) {
    if (after_loss) std::this_thread::sleep_for(Duration(20));
    after_loss = false;
    std::shared_ptr<Handle> h;
    try {
      h = handle_of(generation, deadline);
    } catch (const BackendError& e) {
      for (std::size_t i : todo) out[i].error = e;
      break;
    }
    if (!h) break;  // that session is gone, and its ephemeral nodes with it: nullopt each
    if (deadline.expired()) {
      const BackendError e(
          ErrorCode::deadline_exceeded, kStore,
          "renewal of " + std::to_string(todo.size()) + " nodes: deadline already passed");
      for (std::size_t i : todo) out[i].error = e;
      break;
    }
    std::vector<std::size_t> again;
    // A connection-level failure of node i's request (or of the probe that covered it).
    const auto failed = [&](std::size_t i, int rc, const std::string& what) {
      if (rc == ZSESSIONEXPIRED) return;  // nullopt: lost with its session
      try {
        fail(rc, what);
      } catch (const BackendError& e) {
        if (e.code() == ErrorCode::unavailable && !deadline.expired()) {
          again.push_back(i);
          after_loss = true;
        } else {
          out[i].error = e;
        }
      }
    };
    // Which nodes the probe can cover; every other one gets an arming get.
    std::vector<std::size_t> probed, armed;
    {
      std::lock_guard lock(h->mu);
      for (std::size_t i : todo) {
        OwnNode& n = nodes[i];
        auto it = n.watch == 0 ? h->own_watches.end() : h->own_watches.find(n.watch);
        if (it != h->own_watches.end() && it->second.registered && it->second.verified &&
            it->second.pending == 0 && it->second.epoch == h->epoch &&
            it->second.czxid == n.czxid) {
          probed.push_back(i);
          continue;
        }
        if (n.watch == 0) n.watch = ++h->next_own_watch;
        if (it == h->own_watches.end()) it = h->own_watches.emplace(n.watch, OwnWatch{}).first;
        it->second.czxid = n.czxid;
        ++it->second.pending;  // keeps the entry (and the id known) until the get's reply
        armed.push_back(i);
      }
    }
    // The probe first, then the gets: one round trip for all of them.
    std::shared_ptr<Pending::State> probe;
    if (!probed.empty()) {
      probe = std::make_shared<Pending::State>();
      auto* call = new ProbeCall{probe, h.get()};
      const int rc = zoo_aexists(h->zh, kProbePath, 0, on_probe, call);
      if (rc == ZBADARGUMENTS || rc == ZINVALIDSTATE) delete call;  // not queued: no completion
      if (rc == ZOK) {
        renewal_requests_.fetch_add(1, std::memory_order_relaxed);
      } else {
        for (std::size_t i : probed) failed(i, rc, "exists " + std::string(kProbePath));
        probe.reset();
      }
    }
    std::vector<std::pair<std::size_t, std::shared_ptr<Pending::State>>> sent;
    sent.reserve(armed.size());
    for (std::size_t i : armed) {
      const OwnNode& n = nodes[i];
      auto st = std::make_shared<Pending::State>();
      auto* call = new ArmCall{st, h.get(), n.watch};
      const int rc =
          zoo_awget(h->zh, n.path.c_str(), on_own_watch, context_of(n.watch), on_armed_get, call);
      if (rc == ZBADARGUMENTS || rc == ZINVALIDSTATE) {  // not queued: no completion, no watch
        delete call;
        std::lock_guard lock(h->mu);
        if (auto it = h->own_watches.find(n.watch); it != h->own_watches.end()) {
          --it->second.pending;
          settle(*h, it);
        }
      }
      if (rc != ZOK) {
        failed(i, rc, "get " + n.path);
        continue;
      }
      renewal_requests_.fetch_add(1, std::memory_order_relaxed);
      sent.emplace_back(i, std::move(st));
    }
    if (probe) {
      Reply r;
      std::uint64_t epoch = 0;
      if (!wait_reply(*probe, deadline, r, &epoch)) {
        const BackendError e = no_reply("exists " + std::string(kProbePath));
        for (std::size_t i : probed) out[i].error = e;  // unknown, as a per-node read would be
      } else if (!is_node_level(r.rc)) {
        for (std::size_t i : probed) failed(i, r.rc, "exists " + std::string(kProbePath));
      } else {
        // Every event the server sent before this reply has been handled: a node whose watch
        // is still verified, on the probe's connection, was ours when the probe was answered.
        std::lock_guard lock(h->mu);
        for (std::size_t i : probed) {
          const OwnNode& n = nodes[i];
          auto it = h->own_watches.find(n.watch);
          if (it != h->own_watches.end() && it->second.registered && it->second.verified &&
              it->second.epoch == epoch && epoch == h->epoch && it->second.czxid == n.czxid)
            out[i].stat = NodeStat{.czxid = n.czxid};
          else
            again.push_back(i);  // its watch fired or the connection changed: read it alone
        }
      }
    }
    for (auto& entry : sent) {
      const std::size_t i = entry.first;
      const OwnNode& n = nodes[i];
      Reply r;
      if (!wait_reply(*entry.second, deadline, r)) {
        out[i].error = no_reply("get " + n.path);
        continue;
      }
      if (!is_node_level(r.rc)) {
        failed(i, r.rc, "get " + n.path);
        continue;
      }
      const clientid_t* id = zoo_client_id(h->zh);
      if (r.rc == ZOK && r.stat.czxid == n.czxid && id != nullptr &&
          r.stat.ephemeral_owner == id->client_id)
        out[i].stat = r.stat;
    }
    todo = std::move(again);
  }
  return out;
}

std::uint64_t Session::renewal_requests() const {
  return renewal_requests_.load(std::memory_order_relaxed);
}

std::size_t Session::renewal_watches_for_test() const {
  auto h = current();
  if (!h) return 0;
  std::lock_guard lock(h->mu);
  return h->own_watches.size();
}

}  // namespace leader::zookeeper
