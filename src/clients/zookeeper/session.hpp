#pragma once
// One ZooKeeper client session over the asynchronous C API (libzookeeper_mt), with every call
// bounded by a Deadline (the session half of the ZooKeeper store; it knows nothing of leases): a
// request is sent with zoo_a*(), and the caller waits on a condition variable until the completion
// arrives or the deadline passes (the synchronous C API would block without a timeout while
// disconnected). An expired session is replaced by a new one on the next call; `generation()` tells
// callers that the ephemeral nodes of the old session are gone.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "leader/errors.hpp"
#include "leader/time.hpp"
#include "leader/uri.hpp"

typedef struct _zhandle zhandle_t;  // NOLINT: the C library's own typedef

namespace leader::zookeeper {

/// How to reach the ensemble.
struct SessionConfig {
  std::string hosts;                  ///< "h1:p1,h2:p2[/chroot]" as zookeeper_init takes it
  std::string shown;                  ///< the URI with the password redacted, for errors
  Duration session_timeout{10000};    ///< requested; the server clamps it to its min/max
  std::optional<std::string> digest;  ///< "user:password" for zoo_add_auth("digest"); a secret
  bool creator_acl = false;           ///< create nodes with ZOO_CREATOR_ALL_ACL

  /// The connection part of `zk://[user:password@]host[:port][,host[:port]...][/chroot]` and its
  /// `acl` option (open | creator); throws InvalidArgument naming the redacted URI and the rule.
  /// Other options are the caller's to read and check.
  static SessionConfig from_uri(const Uri& uri);
};

/// Throws InvalidArgument (naming `uri` redacted, `what` and the rule) unless `path` is a znode
/// path: starts with '/', no empty, "." or ".." component, no trailing '/'.
void validate_znode_path(const Uri& uri, const std::string& what, const std::string& path);

/// Escapes a name for use as one znode path component ('/', '%' and control bytes as %XX).
std::string escape_component(std::string_view name);

/// Node-level outcomes of a request (Reply::rc), ZooKeeper's own codes named here so that callers
/// need no ZooKeeper header. Any other code is a connection-level failure: the call throws.
enum NodeCode : int {
  kOk = 0,
  kNoNode = -101,
  kBadVersion = -103,
  kNoChildrenForEphemerals = -108,
  kNodeExists = -110,
  kNotEmpty = -111,
};

/// How create() makes a node.
enum class CreateMode { persistent, ephemeral, ephemeral_sequential };

/// The subset of a znode's Stat the store uses.
struct NodeStat {
  std::int64_t czxid = 0;
  std::int64_t mzxid = 0;  ///< zxid of the last data change (a multi's ops share one zxid)
  std::int64_t ctime = 0;  ///< server wall time in ms, used only against other server times
  std::int64_t mtime = 0;
  std::int32_t version = 0;
  std::int64_t ephemeral_owner = 0;
};

/// The outcome of one request: its NodeCode and whatever the operation returns.
struct Reply {
  int rc = 0;
  std::string value;  ///< created path, or node data
  std::vector<std::string> children;
  NodeStat stat;
};

/// Fault hooks of the tests (tests/integration/zookeeper), process-wide, all off by default.
struct FaultHooks {
  /// The next N creates (of a lock node or a slot) lose their reply: the request is sent and
  /// applied by the server, and the caller gets deadline_exceeded (outcome unknown) anyway.
  std::atomic<int> lose_create_replies{0};
};
FaultHooks& fault_hooks();

/// A request in flight; `wait()` blocks until its reply or the deadline.
class Pending {
 public:
  struct State;
  explicit Pending(std::shared_ptr<State> s) : state_(std::move(s)) {}
  /// The reply, or throws BackendError (deadline_exceeded) when the deadline passes first.
  Reply wait(Deadline deadline, const std::string& what);

 private:
  std::shared_ptr<State> state_;
};

class Watch;

/// One session; thread-safe. Connection-level failures throw BackendError (unavailable,
/// deadline_exceeded, failed_precondition for authentication); node-level outcomes (NodeCode)
/// are returned in `Reply::rc`.
class Session {
 public:
  explicit Session(SessionConfig config);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Connects (or reconnects after expiry) and waits for the connection until `deadline`.
  void connect(Deadline deadline);

  /// Creates `path` (its missing parent first, with its ancestors, as persistent nodes).
  Reply create(const std::string& path, const std::string& data, CreateMode mode,
               Deadline deadline);
  /// Sends a create and, pipelined behind it on the same session, a listing of `dir` (a missing
  /// `dir` is created first, with its ancestors, and the create sent again). The
  /// generation of the session the create was sent on is written to `*sent_on` before it is sent
  /// (a call may replace an expired session first): also when the call then throws, it names the
  /// session that may hold the node.
  std::pair<Reply, Reply> create_and_list(const std::string& path, const std::string& data,
                                          CreateMode mode, const std::string& dir,
                                          Deadline deadline, std::uint64_t* sent_on = nullptr);
  /// One multi: setData(`dir`, `dir_data`, `dir_version`) and create(`path`), atomically, with a
  /// listing of `dir` pipelined behind it. The first reply's rc is the failing op's code (kOk,
  /// kBadVersion, kNodeExists, ...); on ZOK its stat is `dir`'s new stat, whose mzxid is also
  /// the created node's czxid. `sent_on` as for create_and_list.
  std::pair<Reply, Reply> set_create_and_list(const std::string& dir, const std::string& dir_data,
                                              int dir_version, const std::string& path,
                                              const std::string& data, CreateMode mode,
                                              Deadline deadline, std::uint64_t* sent_on = nullptr);
  /// Sends a sync of `dir`, then a get of `first` and a listing of `dir` pipelined behind it:
  /// both read at least every change committed before the sync (current on any ensemble member).
  std::pair<Reply, Reply> get_and_list(const std::string& first, const std::string& dir,
                                       Deadline deadline);
  Reply remove(const std::string& path, int version, Deadline deadline);
  Reply exists(const std::string& path, Deadline deadline);
  Reply get(const std::string& path, Deadline deadline);
  Reply children(const std::string& path, Deadline deadline);
  Reply set(const std::string& path, const std::string& data, int version, Deadline deadline);
  /// The stat of `path` read on the session of `generation` only, if that session still lives
  /// and the node is the one it created with `czxid`; nullopt otherwise (never a newer session).
  std::optional<NodeStat> stat_own(const std::string& path, std::int64_t czxid,
                                   std::uint64_t generation, Deadline deadline);
  /// What stat_own answers for one node of a batch: the stat, nullopt, or the error it throws.
  struct OwnStat {
    std::optional<NodeStat> stat;
    std::optional<BackendError> error;
  };
  /// One held node of renew_own_batch: its path and czxid, and the id of its renewal watch on
  /// the handle of the batch's session generation (0: none yet; the call assigns one and writes
  /// it back, to be passed again with the node).
  struct OwnNode {
    std::string path;
    std::int64_t czxid = 0;
    std::uint64_t watch = 0;
  };
  /// stat_own for many `nodes` of the session of `generation` in one round trip (own_nodes.cpp):
  /// one probe of the session covers every node whose renewal watch is armed, verified and quiet
  /// on the current connection; every other node is read with a get that arms its watch. Result
  /// i: the stat (only its czxid when the probe covered it), nullopt (not ours, or that session
  /// is gone), or the error (no reply by `deadline`, or the connection failed: outcome unknown).
  std::vector<OwnStat> renew_own_batch(std::vector<OwnNode>& nodes, std::uint64_t generation,
                                       Deadline deadline);
  /// Requests renew_own_batch sent on this Session so far (probes and gets).
  [[nodiscard]] std::uint64_t renewal_requests() const;
  /// Tests only: renewal watches the current handle still tracks (armed, or a get in flight).
  [[nodiscard]] std::size_t renewal_watches_for_test() const;
  /// Deletes `path` only if it is a node of the session of `generation` (czxid `czxid` unless 0,
  /// and `accept(get reply)` when given): a get and a delete with that version, both on that
  /// session's handle, serialized with every other such delete of this Session. A node path can
  /// be reused by another owner once our node is gone (group slots), so a newer session must
  /// never delete by path: when the creating session is gone, its ephemeral node went with it.
  /// True when deleted.
  bool remove_own(const std::string& path, std::int64_t czxid, std::uint64_t generation,
                  Deadline deadline, const std::function<bool(const Reply&)>& accept = {});
  /// Sends a get without waiting (for pipelined reads).
  Pending get_async(const std::string& path, Deadline deadline);
  /// Creates `path` and its missing ancestors as persistent nodes; existing ones are fine.
  void ensure_path(const std::string& path, Deadline deadline);
  /// Lists `dir`'s children and leaves a child watch on it (watch.cpp): the listing is read
  /// after the watch is set, so every later change of the children fires it. When `dir` does not
  /// exist (rc kNoNode, no children) the watch is an exists watch, fired by its creation.
  std::pair<Reply, Watch> watch_children(const std::string& dir, Deadline deadline);
  /// Reads whether `path` exists and leaves an exists watch on it (watch.cpp), fired by its
  /// deletion, a change of its data or its creation; joins a watch already armed on it.
  std::pair<Reply, Watch> watch_exists(const std::string& path, Deadline deadline);

  /// Throws the BackendError for a connection-level (or unexpected node-level) code `rc` of
  /// request `what`: failed_precondition (auth), unavailable (connection, session), or internal.
  [[noreturn]] void fail(int rc, const std::string& what) const;
  /// Throws deadline_exceeded naming `what` when `deadline` has passed already.
  static void check_time(Deadline deadline, const std::string& what);
  /// Increments whenever a new session replaces an expired or closed one.
  [[nodiscard]] std::uint64_t generation() const;
  /// The current session id (0 before the first connection).
  [[nodiscard]] std::int64_t session_id() const;
  /// The session timeout the server negotiated at the last (re)connection, also while
  /// disconnected (the C client then reports the requested one); the requested one only before
  /// the first connection of this Session, when no lease exists yet.
  [[nodiscard]] Duration negotiated_timeout() const;
  /// True when the session is connected right now.
  [[nodiscard]] bool connected() const;
  /// The URI with the password redacted.
  [[nodiscard]] const std::string& shown() const { return config_.shown; }
  /// Tests only: ends the current session on the server (a second client resumes it and closes
  /// it) and waits until this Session's handle has seen the expiry, without replacing it: the
  /// next call starts a new session, as after a pause or partition longer than the timeout.
  void expire_for_test(Deadline deadline);

  struct Handle;  // one zhandle_t and its watcher state

 private:
  std::shared_ptr<Handle> ready_handle(Deadline deadline);
  std::shared_ptr<Handle> current() const;
  std::shared_ptr<Handle> handle_of(std::uint64_t generation, Deadline deadline);
  std::optional<Reply> on_handle(const std::shared_ptr<Handle>& h, const std::string& path,
                                 int version, bool remove, Deadline deadline);
  std::pair<std::shared_ptr<Handle>, std::optional<Reply>> get_own(const std::string& path,
                                                                   std::int64_t czxid,
                                                                   std::uint64_t generation,
                                                                   Deadline deadline);
  static std::optional<Duration> negotiated_of(Handle& h);
  /// One request: `send(zh, completion context)` submits it on a connected handle; its reply.
  template <class Send>
  Reply call(const std::string& what, Deadline deadline, Send send);
  /// A write sent by `send(zh, its Pending::State, completion context)` and a listing of `dir`
  /// pipelined behind it; `sent_on` as for create_and_list.
  template <class Send>
  std::pair<Reply, Reply> write_and_list(const std::string& what, const std::string& dir,
                                         Deadline deadline, std::uint64_t* sent_on, Send send);
  Reply finish(int submit_rc, const std::shared_ptr<Pending::State>& st, Deadline deadline,
               const std::string& what);
  std::pair<Reply, Watch> arm(const std::shared_ptr<Handle>& h, const std::string& path,
                              bool exists, Deadline deadline);
  std::pair<Reply, Watch> read_watched(const std::shared_ptr<Handle>& h, const std::string& path,
                                       bool exists, Deadline deadline);

  SessionConfig config_;
  mutable std::mutex mu_;
  std::mutex own_mu_;  ///< serializes remove_own (its get and its delete)
  std::shared_ptr<Handle> handle_;
  std::uint64_t generation_ = 0;
  Duration last_negotiated_{0};  ///< of the handles replaced so far
  std::atomic<std::uint64_t> renewal_requests_{0};
};

/// A watch that Session::watch_children left on the server. ZooKeeper watches are one-shot: it
/// fires once, at the first change after the read that set it (or at any session event), and a
/// caller that wants the next change reads and arms again. Waiting is thread-safe; the watch's
/// context stays with its session handle until the C client can no longer call it, so dropping a
/// Watch that has not fired is safe.
class Watch {
 public:
  struct State;
  /// Why wait() returned.
  enum class Woken { fired, deadline, stopped };
  Watch(std::shared_ptr<Session::Handle> handle, std::shared_ptr<State> state, std::string shown)
      : handle_(std::move(handle)), state_(std::move(state)), shown_(std::move(shown)) {}
  /// Blocks until the watch fired and its session can answer a read again (connected, or known
  /// to be expired: the next call opens a new one), until `deadline` or until `stop` is
  /// requested. Throws BackendError(unavailable) when the watch fired on a disconnection that
  /// did not end before the deadline: a read would have failed the same way.
  Woken wait(Deadline deadline, const std::stop_token& stop);

 private:
  std::shared_ptr<Session::Handle> handle_;
  std::shared_ptr<State> state_;
  std::string shown_;
};

}  // namespace leader::zookeeper
