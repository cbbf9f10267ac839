#include "session.hpp"

#include <zookeeper/zookeeper.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "completions.hpp"
#include "handle.hpp"
#include "leader/errors.hpp"

namespace leader::zookeeper {

using completion::MultiBuffers;
using completion::on_data;
using completion::on_multi;
using completion::on_stat;
using completion::on_string;
using completion::on_string_stat;
using completion::on_strings;
using completion::on_void;

namespace {

constexpr int kResolveDelayMs = 10000;  // zoo_set_servers_resolution_delay: see ready_handle()

void on_session_event(zhandle_t* zh, int type, int state, const char* /*path*/, void* ctx) {
  if (type != ZOO_SESSION_EVENT || ctx == nullptr) return;
  auto* h = static_cast<Session::Handle*>(ctx);
  // The C client stores the server's answer before it queues this event; later (while not
  // connected) zoo_recv_timeout() may return the requested timeout again, so cache it now.
  const int negotiated = state == ZOO_CONNECTED_STATE ? zoo_recv_timeout(zh) : 0;
  {
    std::lock_guard lock(h->mu);
    h->state = state;
    ++h->epoch;  // any session event: renewal watches armed before it are unverified
    if (negotiated > 0) h->negotiated_ms = negotiated;
    if (state == ZOO_EXPIRED_SESSION_STATE) h->expired = true;
    if (state == ZOO_AUTH_FAILED_STATE) h->auth_failed = true;
  }
  h->cv.notify_all();
}

// The C client logs connection trouble to stderr; stay quiet unless asked (LEADER_ZK_LOG=1).
void on_log(const char* message) {
  static const bool enabled = std::getenv("LEADER_ZK_LOG") != nullptr;
  if (enabled) std::fprintf(stderr, "zookeeper: %s\n", message);
}

// Whether `h`'s session is over: expired, or refused (authentication). The next call replaces it.
bool dead(Session::Handle& h) {
  std::lock_guard lock(h.mu);
  return h.expired || h.auth_failed;
}

// A create reply the fault hook drops: the server applied it, the caller learns nothing.
void lose_reply_if_hooked(const std::string& what) {
  auto& lose = fault_hooks().lose_create_replies;
  for (int n = lose.load(); n > 0;)
    if (lose.compare_exchange_weak(n, n - 1))
      throw BackendError(ErrorCode::deadline_exceeded, kStore,
                         what + ": no reply before the deadline (outcome unknown; test hook)");
}

}  // namespace

FaultHooks& fault_hooks() {
  static FaultHooks hooks;
  return hooks;
}

Reply Pending::wait(Deadline deadline, const std::string& what) {
  std::unique_lock lock(state_->mu);
  if (!state_->cv.wait_until(lock, deadline.at(), [&] { return state_->done; }))
    throw BackendError(ErrorCode::deadline_exceeded, kStore,
                       what + ": no reply before the deadline (outcome unknown)");
  return state_->reply;
}

Session::Session(SessionConfig config) : config_(std::move(config)) {
  // The C client formats INFO messages (connects, closes) into a process-wide static buffer from
  // several threads (a data race inside libzookeeper_mt, reported by TSan); they also go nowhere
  // by default, so they are not produced unless LEADER_ZK_LOG is set (the level is process-wide).
  static std::once_flag once;
  std::call_once(once, [] {
    zoo_set_debug_level(std::getenv("LEADER_ZK_LOG") != nullptr ? ZOO_LOG_LEVEL_INFO
                                                                : ZOO_LOG_LEVEL_ERROR);
  });
}

Session::~Session() {
  std::shared_ptr<Handle> h;
  {
    std::lock_guard lock(mu_);
    h = std::move(handle_);
  }
}

std::shared_ptr<Session::Handle> Session::ready_handle(Deadline deadline) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::shared_ptr<Handle> h;
    std::shared_ptr<Handle> old;  // closed outside the lock
    {
      std::lock_guard lock(mu_);
      if (!handle_ || dead(*handle_)) {
        if (handle_) last_negotiated_ = negotiated_of(*handle_).value_or(last_negotiated_);
        old = std::move(handle_);
        auto fresh = std::make_shared<Handle>();
        fresh->zh = zookeeper_init2(config_.hosts.c_str(), on_session_event,
                                    static_cast<int>(config_.session_timeout.count()), nullptr,
                                    fresh.get(), 0, on_log);
        if (fresh->zh == nullptr)
          throw BackendError(ErrorCode::unavailable, kStore,
                             "cannot create a ZooKeeper client for '" + config_.shown + "'");
        // By default the C client resolves every server name again (getaddrinfo: sockets,
        // /etc/hosts, netlink) each time its I/O thread polls, i.e. for nearly every request:
        // about half the client CPU of renewals (src/stores/zookeeper/README.md, "Batched
        // renewals"). At most once per kResolveDelayMs instead (a connection loss is not a routine
        // resolution: zookeeper.h).
        zoo_set_servers_resolution_delay(fresh->zh, kResolveDelayMs);
        if (const std::string* digest = config_.digest ? &*config_.digest : nullptr)
          zoo_add_auth(fresh->zh, "digest", digest->data(), static_cast<int>(digest->size()),
                       nullptr, nullptr);
        handle_ = fresh;
        fresh->generation = ++generation_;
      }
      h = handle_;
    }
    old.reset();
    std::unique_lock lock(h->mu);
    h->cv.wait_until(lock, deadline.at(), [&] {
      return h->state == ZOO_CONNECTED_STATE || h->expired || h->auth_failed;
    });
    if (h->auth_failed)
      throw BackendError(ErrorCode::failed_precondition, kStore,
                         "authentication to '" + config_.shown + "' failed");
    if (h->state == ZOO_CONNECTED_STATE) return h;
    if (!h->expired) break;
  }
  throw BackendError(ErrorCode::unavailable, kStore,
                     "not connected to '" + config_.shown + "' before the deadline");
}

void Session::connect(Deadline deadline) { ready_handle(deadline); }

void Session::fail(int rc, const std::string& what) const {
  std::string msg = what + " on '" + config_.shown + "': " + zerror(rc);
  if (rc == ZNOAUTH || rc == ZAUTHFAILED)
    throw BackendError(ErrorCode::failed_precondition, kStore, msg);
  if (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZSESSIONEXPIRED || rc == ZCLOSING ||
      rc == ZINVALIDSTATE || rc == ZSESSIONMOVED)
    throw BackendError(ErrorCode::unavailable, kStore, msg);
  throw BackendError(ErrorCode::internal, kStore, msg);
}

void Session::check_time(Deadline deadline, const std::string& what) {
  if (deadline.expired())
    throw BackendError(ErrorCode::deadline_exceeded, kStore, what + ": deadline already passed");
}

Reply Session::finish(int submit_rc, const std::shared_ptr<Pending::State>& st, Deadline deadline,
                      const std::string& what) {
  if (submit_rc != ZOK) fail(submit_rc, what);
  Reply r = Pending(st).wait(deadline, what + " on '" + config_.shown + "'");
  if (!is_node_level(r.rc)) fail(r.rc, what);
  return r;
}

namespace {

// Allocates the completion context; on a synchronous submit failure the C client has not kept
// it (argument and state checks come first), so it is freed here.
struct Submit {
  std::shared_ptr<Pending::State> st = std::make_shared<Pending::State>();
  std::shared_ptr<Pending::State>* holder = new std::shared_ptr<Pending::State>(st);
  int done(int rc) {
    if (rc == ZBADARGUMENTS || rc == ZINVALIDSTATE) delete holder;
    return rc;
  }
};

int zoo_mode(CreateMode mode) {
  switch (mode) {
    case CreateMode::ephemeral:
      return ZOO_EPHEMERAL;
    case CreateMode::ephemeral_sequential:
      return ZOO_EPHEMERAL_SEQUENTIAL;
    case CreateMode::persistent:
      break;
  }
  return ZOO_PERSISTENT;
}

const ACL_vector* acl(const SessionConfig& config) {
  return config.creator_acl ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
}

}  // namespace

template <class Send>
Reply Session::call(const std::string& what, Deadline deadline, Send send) {
  check_time(deadline, what);
  auto h = ready_handle(deadline);
  Submit s;
  return finish(s.done(send(h->zh, s.holder)), s.st, deadline, what);
}

template <class Send>
std::pair<Reply, Reply> Session::write_and_list(const std::string& what, const std::string& dir,
                                                Deadline deadline, std::uint64_t* sent_on,
                                                Send send) {
  check_time(deadline, what);
  auto h = ready_handle(deadline);
  if (sent_on != nullptr) *sent_on = h->generation;
  Submit written;
  if (int rc = written.done(send(h->zh, written.st, written.holder)); rc != ZOK) fail(rc, what);
  // Sent right behind the write on the same session: the server answers it after the write, so
  // the listing includes the new node.
  Submit listed;
  int rc = listed.done(zoo_aget_children(h->zh, dir.c_str(), 0, on_strings, listed.holder));
  Reply first = finish(ZOK, written.st, deadline, what);
  if (rc != ZOK) fail(rc, "list " + dir);
  Reply second = finish(ZOK, listed.st, deadline, "list " + dir);
  if (first.rc == ZOK) lose_reply_if_hooked(what);
  return {std::move(first), std::move(second)};
}

Reply Session::create(const std::string& path, const std::string& data, CreateMode mode,
                      Deadline deadline) {
  for (int attempt = 0;; ++attempt) {
    Reply r = call("create " + path, deadline, [&](zhandle_t* zh, const void* ctx) {
      return zoo_acreate2(zh, path.c_str(), data.data(), static_cast<int>(data.size()),
                          acl(config_), zoo_mode(mode), on_string_stat, ctx);
    });
    const std::size_t parent = path.rfind('/');
    if (r.rc != ZNONODE || attempt > 0 || parent == 0 || parent == std::string::npos) return r;
    ensure_path(path.substr(0, parent), deadline);  // the first node under its parent
  }
}

std::pair<Reply, Reply> Session::create_and_list(const std::string& path, const std::string& data,
                                                 CreateMode mode, const std::string& dir,
                                                 Deadline deadline, std::uint64_t* sent_on) {
  for (int attempt = 0;; ++attempt) {
    auto r = write_and_list(
        "create " + path, dir, deadline, sent_on, [&](zhandle_t* zh, auto&&, const void* ctx) {
          return zoo_acreate2(zh, path.c_str(), data.data(), static_cast<int>(data.size()),
                              acl(config_), zoo_mode(mode), on_string_stat, ctx);
        });
    if (r.first.rc != ZNONODE || attempt > 0) return r;
    ensure_path(dir, deadline);  // the first create under `dir`
  }
}

std::pair<Reply, Reply> Session::set_create_and_list(const std::string& dir,
                                                     const std::string& dir_data, int dir_version,
                                                     const std::string& path,
                                                     const std::string& data, CreateMode mode,
                                                     Deadline deadline, std::uint64_t* sent_on) {
  const std::string what = "multi set " + dir + " + create " + path;
  return write_and_list(
      what, dir, deadline, sent_on, [&](zhandle_t* zh, const auto& st, const void* ctx) {
        auto buffers = std::make_shared<MultiBuffers>();
        st->buffers = buffers;
        zoo_op_t ops[2];  // serialized by zoo_amulti itself; the results are written at completion
        zoo_set_op_init(&ops[0], dir.c_str(), dir_data.data(), static_cast<int>(dir_data.size()),
                        dir_version, &buffers->dir_stat);
        zoo_create_op_init(&ops[1], path.c_str(), data.data(), static_cast<int>(data.size()),
                           acl(config_), zoo_mode(mode), buffers->created, sizeof buffers->created);
        return zoo_amulti(zh, 2, ops, buffers->results, on_multi, ctx);
      });
}

std::pair<Reply, Reply> Session::get_and_list(const std::string& first, const std::string& dir,
                                              Deadline deadline) {
  // A sync first, on the same connection: the server answers the get and the listing only after
  // it, with every change committed before the sync reached the leader (the Programmer's Guide,
  // "Consistency Guarantees": a follower can lag behind; sync makes a read after it current).
  // Without it, a follower could list a slot another client had just released as still taken.
  // Pipelined: one round trip to the leader more on an ensemble, nothing to wait for standalone.
  check_time(deadline, "sync " + dir);
  auto h = ready_handle(deadline);
  Submit synced;
  if (int rc = synced.done(zoo_async(h->zh, dir.c_str(), on_string, synced.holder)); rc != ZOK)
    fail(rc, "sync " + dir);
  // The get and the listing on the sync's handle, not a newer one: the sync orders only the
  // reads of its own connection.
  Submit got;
  if (int rc = got.done(zoo_aget(h->zh, first.c_str(), 0, on_data, got.holder)); rc != ZOK)
    fail(rc, "get " + first);
  Submit listed;
  int rc = listed.done(zoo_aget_children(h->zh, dir.c_str(), 0, on_strings, listed.holder));
  finish(ZOK, synced.st, deadline, "sync " + dir);  // throws unless answered
  Reply data = finish(ZOK, got.st, deadline, "get " + first);
  if (rc != ZOK) fail(rc, "list " + dir);
  return {std::move(data), finish(ZOK, listed.st, deadline, "list " + dir)};
}

Reply Session::remove(const std::string& path, int version, Deadline deadline) {
  return call("delete " + path, deadline, [&](zhandle_t* zh, const void* ctx) {
    return zoo_adelete(zh, path.c_str(), version, on_void, ctx);
  });
}

Reply Session::exists(const std::string& path, Deadline deadline) {
  return call("exists " + path, deadline, [&](zhandle_t* zh, const void* ctx) {
    return zoo_aexists(zh, path.c_str(), 0, on_stat, ctx);
  });
}

Reply Session::get(const std::string& path, Deadline deadline) {
  return get_async(path, deadline).wait(deadline, "get " + path);
}

Pending Session::get_async(const std::string& path, Deadline deadline) {
  check_time(deadline, "get " + path);
  auto h = ready_handle(deadline);
  Submit s;
  if (int rc = s.done(zoo_aget(h->zh, path.c_str(), 0, on_data, s.holder)); rc != ZOK)
    fail(rc, "get " + path);
  return Pending(s.st);
}

Reply Session::children(const std::string& path, Deadline deadline) {
  return call("list " + path, deadline, [&](zhandle_t* zh, const void* ctx) {
    return zoo_aget_children(zh, path.c_str(), 0, on_strings, ctx);
  });
}

Reply Session::set(const std::string& path, const std::string& data, int version,
                   Deadline deadline) {
  return call("set " + path, deadline, [&](zhandle_t* zh, const void* ctx) {
    return zoo_aset(zh, path.c_str(), data.data(), static_cast<int>(data.size()), version, on_stat,
                    ctx);
  });
}

void Session::ensure_path(const std::string& path, Deadline deadline) {
  for (std::size_t pos = path.find('/', 1);; pos = path.find('/', pos + 1)) {
    std::string prefix = path.substr(0, pos);
    Reply r = create(prefix, "", CreateMode::persistent, deadline);
    if (r.rc != ZOK && r.rc != ZNODEEXISTS) fail(r.rc, "create " + prefix);
    if (pos == std::string::npos) break;
  }
}

// The handle of `generation` once connected; null when that session is gone (replaced, expired).
std::shared_ptr<Session::Handle> Session::handle_of(std::uint64_t generation, Deadline deadline) {
  std::shared_ptr<Handle> h;
  {
    std::lock_guard lock(mu_);
    if (generation_ != generation || !handle_ || dead(*handle_)) return nullptr;
    h = handle_;
  }
  std::unique_lock lock(h->mu);
  h->cv.wait_until(lock, deadline.at(),
                   [&] { return h->state == ZOO_CONNECTED_STATE || h->expired || h->auth_failed; });
  if (h->expired || h->auth_failed) return nullptr;
  if (h->state != ZOO_CONNECTED_STATE)
    throw BackendError(ErrorCode::unavailable, kStore,
                       "not connected to '" + config_.shown + "' before the deadline");
  return h;
}

// A get (or a delete with `version`) on `h` only; nullopt when its session expired meanwhile.
std::optional<Reply> Session::on_handle(const std::shared_ptr<Handle>& h, const std::string& path,
                                        int version, bool remove, Deadline deadline) {
  const std::string what = (remove ? "delete " : "get ") + path;
  check_time(deadline, what);
  Submit s;
  int rc = s.done(remove ? zoo_adelete(h->zh, path.c_str(), version, on_void, s.holder)
                         : zoo_aget(h->zh, path.c_str(), 0, on_data, s.holder));
  if (rc == ZSESSIONEXPIRED) return std::nullopt;
  if (rc != ZOK) fail(rc, what);
  Reply r = Pending(s.st).wait(deadline, what + " on '" + config_.shown + "'");
  if (r.rc == ZSESSIONEXPIRED) return std::nullopt;
  if (!is_node_level(r.rc)) fail(r.rc, what);
  return r;
}

// A get of `path` on the session of `generation`, kept only when it shows that session's node
// of `czxid` (of any czxid when 0); retried on the same handle after a connection loss (a read:
// the handle then either reconnects its session or learns that it expired). Null handle: that
// session is gone.
std::pair<std::shared_ptr<Session::Handle>, std::optional<Reply>> Session::get_own(
    const std::string& path, std::int64_t czxid, std::uint64_t generation, Deadline deadline) {
  while (true) {
    auto h = handle_of(generation, deadline);
    if (!h) return {nullptr, std::nullopt};
    try {
      auto r = on_handle(h, path, 0, false, deadline);
      const clientid_t* id = zoo_client_id(h->zh);
      if (r && (r->rc != ZOK || (czxid != 0 && r->stat.czxid != czxid) || id == nullptr ||
                r->stat.ephemeral_owner != id->client_id))
        r.reset();
      return {h, r};
    } catch (const BackendError& e) {
      if (e.code() != ErrorCode::unavailable || deadline.expired()) throw;
    }
    std::this_thread::sleep_for(Duration(20));
  }
}

std::optional<NodeStat> Session::stat_own(const std::string& path, std::int64_t czxid,
                                          std::uint64_t generation, Deadline deadline) {
  auto r = get_own(path, czxid, generation, deadline).second;
  return r ? std::optional(r->stat) : std::nullopt;
}

bool Session::remove_own(const std::string& path, std::int64_t czxid, std::uint64_t generation,
                         Deadline deadline, const std::function<bool(const Reply&)>& accept) {
  std::lock_guard own(own_mu_);
  auto [h, r] = get_own(path, czxid, generation, deadline);
  if (!r || (accept && !accept(*r))) return false;  // a gone session took its nodes with it
  auto d = on_handle(h, path, r->stat.version, true, deadline);
  return d && d->rc == ZOK;
}

std::uint64_t Session::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

std::shared_ptr<Session::Handle> Session::current() const {
  std::lock_guard lock(mu_);
  return handle_;
}

std::int64_t Session::session_id() const {
  auto h = current();
  if (!h) return 0;
  const clientid_t* id = zoo_client_id(h->zh);
  return id == nullptr ? 0 : id->client_id;
}

std::optional<Duration> Session::negotiated_of(Handle& h) {
  std::lock_guard lock(h.mu);
  if (h.negotiated_ms <= 0) return std::nullopt;
  return Duration(h.negotiated_ms);
}

Duration Session::negotiated_timeout() const {
  if (auto h = current())
    if (auto t = negotiated_of(*h)) return *t;
  std::lock_guard lock(mu_);
  return last_negotiated_.count() > 0 ? last_negotiated_ : config_.session_timeout;
}

void Session::expire_for_test(Deadline deadline) {
  auto h = ready_handle(deadline);
  const clientid_t* id = zoo_client_id(h->zh);
  if (id == nullptr) throw BackendError(ErrorCode::internal, kStore, "no session to expire");
  const clientid_t resumed = *id;
  // The server moves the session to the twin's connection, then back when our handle reconnects;
  // the twin's close only ends the session while the twin holds it, so this may take a few tries.
  while (!deadline.expired()) {
    clientid_t copy = resumed;
    zhandle_t* twin = zookeeper_init2(config_.hosts.c_str(), nullptr,
                                      static_cast<int>(config_.session_timeout.count()), &copy,
                                      nullptr, 0, on_log);
    if (twin == nullptr) throw BackendError(ErrorCode::unavailable, kStore, "no second client");
    const Deadline connecting = Deadline::after(Duration(2000));
    while (zoo_state(twin) != ZOO_CONNECTED_STATE && !connecting.expired())
      std::this_thread::sleep_for(Duration(2));
    zookeeper_close(twin);  // closes the session on the server if the twin still holds it
    std::unique_lock lock(h->mu);
    if (h->cv.wait_until(lock, std::min(deadline.at(), Deadline::after(Duration(2000)).at()),
                         [&] { return h->expired; }))
      return;
  }
  throw BackendError(ErrorCode::deadline_exceeded, kStore, "the session did not expire");
}

bool Session::connected() const {
  auto h = current();
  if (!h) return false;
  std::lock_guard lock(h->mu);
  return h->state == ZOO_CONNECTED_STATE && !h->expired;
}

}  // namespace leader::zookeeper
