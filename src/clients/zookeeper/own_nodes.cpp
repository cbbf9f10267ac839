// Session-level renewal of held nodes (Session::renew_own_batch). Each held node carries a
// one-shot data watch, set by a get of the node on the session that created it. While that watch
// is armed, verified (the get showed our node), has not fired, and the connection has not changed
// since, one probe (an exists of "/") renews every such node at once; any other node is read
// again on its own, which also re-arms its watch. Why the probe proves each node (the C client
// hands a connection's events and replies to one completion thread in the order they came), and
// why the watch's C context is an id, never a pointer: src/stores/zookeeper/README.md, "Batched
// renewals".

#include <zookeeper/zookeeper.h>

#include <cstdint>
#include <memory>
#include <thread>

#include "handle.hpp"
#include "leader/errors.hpp"
#include "session.hpp"

namespace leader::zookeeper {
namespace {

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

// One arming get (`id`: its watch) or the probe (`id` 0) in flight.
struct RenewCall {
  std::shared_ptr<Pending::State> reply;
  Session::Handle* handle = nullptr;  // outlives every completion: zookeeper_close joins them
  std::uint64_t id = 0;
};

// Runs on the completion thread, in order with the watch's events: the C client registered the
// watch (a data watch: on ZOK only) before queueing this reply.
void on_armed_get(int rc, const char* /*value*/, int /*len*/, const struct Stat* stat,
                  const void* data) {
  std::unique_ptr<RenewCall> call(static_cast<RenewCall*>(const_cast<void*>(data)));
  Session::Handle& h = *call->handle;
  {
    std::lock_guard lock(h.mu);
    if (auto it = h.own_watches.find(call->id); it != h.own_watches.end()) {
      OwnWatch& w = it->second;
      --w.pending;
      if (rc == ZOK) {
        w.registered = true;
        w.verified = stat != nullptr && stat->czxid == w.czxid && h.owns(stat->ephemeralOwner);
        w.epoch = h.epoch;
      }
      settle(h, it);
    }
  }
  call->reply->finish([&](Reply& r) { r = reply_of(rc, stat); });
}

void on_probe(int rc, const struct Stat* /*stat*/, const void* data) {
  std::unique_ptr<RenewCall> call(static_cast<RenewCall*>(const_cast<void*>(data)));
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

}  // namespace

std::vector<Session::OwnStat> Session::renew_own_batch(std::vector<OwnNode>& nodes,
                                                       std::uint64_t generation,
                                                       Deadline deadline) {
  std::vector<OwnStat> out(nodes.size());
  std::vector<std::size_t> todo(nodes.size());
  for (std::size_t i = 0; i < todo.size(); ++i) todo[i] = i;
  const std::string probe_what = std::string("exists ") + kProbePath;
  bool after_loss = false;  // some request's connection was lost: give the client a moment
  while (!todo.empty()) {
    if (after_loss) std::this_thread::sleep_for(Duration(20));
    after_loss = false;
    std::shared_ptr<Handle> h;
    try {
      h = handle_of(generation, deadline);
      if (h) check_time(deadline, "renewal of " + std::to_string(todo.size()) + " nodes");
    } catch (const BackendError& e) {
      for (std::size_t i : todo) out[i].error = e;
      break;
    }
    if (!h) break;  // that session is gone, and its ephemeral nodes with it: nullopt each
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
    // The reply to `st` (whose what is `what`), or nullopt after recording the failure for `of`.
    const auto reply = [&](const std::shared_ptr<Pending::State>& st,
                           const std::vector<std::size_t>& of,
                           const std::string& what) -> std::optional<Reply> {
      try {
        Reply r = Pending(st).wait(deadline, what + " on '" + config_.shown + "'");
        if (is_node_level(r.rc)) return r;
        for (std::size_t i : of) failed(i, r.rc, what);
      } catch (const BackendError& e) {  // no reply: unknown, as a per-node read would be
        for (std::size_t i : of) out[i].error = e;
      }
      return std::nullopt;
    };
    // Under h->mu: node n's watch is armed, verified and quiet since `epoch`, the current one.
    const auto covered = [&](const OwnNode& n, std::uint64_t epoch) {
      auto it = n.watch == 0 ? h->own_watches.end() : h->own_watches.find(n.watch);
      return it != h->own_watches.end() && it->second.registered && it->second.verified &&
             it->second.pending == 0 && it->second.epoch == epoch && epoch == h->epoch &&
             it->second.czxid == n.czxid;
    };
    // Which nodes the probe can cover; every other one gets an arming get.
    std::vector<std::size_t> probed, armed;
    {
      std::lock_guard lock(h->mu);
      for (std::size_t i : todo) {
        OwnNode& n = nodes[i];
        if (covered(n, h->epoch)) {
          probed.push_back(i);
          continue;
        }
        if (n.watch == 0) n.watch = ++h->next_own_watch;
        OwnWatch& w = h->own_watches[n.watch];
        w.czxid = n.czxid;
        ++w.pending;  // keeps the entry (and the id known) until the get's reply
        armed.push_back(i);
      }
    }
    // The probe first, then the gets: one round trip for all of them.
    std::shared_ptr<Pending::State> probe;
    if (!probed.empty()) {
      probe = std::make_shared<Pending::State>();
      auto* call = new RenewCall{probe, h.get()};
      const int rc = zoo_aexists(h->zh, kProbePath, 0, on_probe, call);
      if (rc == ZBADARGUMENTS || rc == ZINVALIDSTATE) delete call;  // not queued: no completion
      if (rc == ZOK) {
        renewal_requests_.fetch_add(1, std::memory_order_relaxed);
      } else {
        for (std::size_t i : probed) failed(i, rc, probe_what);
        probe.reset();
      }
    }
    std::vector<std::pair<std::size_t, std::shared_ptr<Pending::State>>> sent;
    sent.reserve(armed.size());
    for (std::size_t i : armed) {
      const OwnNode& n = nodes[i];
      auto st = std::make_shared<Pending::State>();
      auto* call = new RenewCall{st, h.get(), n.watch};
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
    if (probe && reply(probe, probed, probe_what)) {
      // Every event the server sent before this reply has been handled: a node whose watch is
      // still verified, on the probe's connection, was ours when the probe was answered.
      std::lock_guard lock(h->mu);
      for (std::size_t i : probed) {
        if (covered(nodes[i], probe->epoch))
          out[i].stat = NodeStat{.czxid = nodes[i].czxid};
        else
          again.push_back(i);  // its watch fired or the connection changed: read it alone
      }
    }
    for (auto& [i, st] : sent) {
      auto r = reply(st, {i}, "get " + nodes[i].path);
      if (r && r->rc == ZOK && r->stat.czxid == nodes[i].czxid && h->owns(r->stat.ephemeral_owner))
        out[i].stat = r->stat;
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
