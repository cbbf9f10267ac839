#pragma once
// The lease recipe of the ZooKeeper store over the session of src/clients/zookeeper: a Core is one
// Session, the leases it holds and the store's own timer thread; Sessions picks the Core of a
// lease and runs an acquisition on it (zk_acquire.cpp). A Core outlives its ZooKeeperStore while
// it still holds leases ("lingering"), so a lease lives until its ttl even when the store object
// that took it is destroyed, as it would in any other store; the session is closed once nothing is
// held any more. Every live Core is listed in a process-wide registry so that any store instance
// of the process can renew or release a lease by its owner token.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "clients/zookeeper/session.hpp"
#include "leader/store.hpp"
#include "zk_config.hpp"

namespace leader::zookeeper {

/// A contender node of a single lock, with its sequence number.
struct Contender {
  std::string name;
  std::int64_t seq = 0;
};

/// Contenders among `children` ("...__lock__<seq>", "...__rlock__<seq>", Curator's
/// "...lock-<seq>"), sorted by sequence number.
std::vector<Contender> sorted_contenders(const std::vector<std::string>& children);

/// The slot index of a child named `slot-<i>`, or nullopt.
std::optional<int> slot_index(std::string_view name);

/// A lease this Core holds: the node, the session generation that created it, and the local
/// steady time at which the timer deletes the node unless the lease is renewed.
struct Held {
  std::string path;
  std::int64_t czxid = 0;
  std::uint64_t generation = 0;
  TimePoint expire_at{};
  bool kept = false;  ///< released with keep_for > 0: only the timer deletes it
  int slot = 0;
  std::uint64_t watch = 0;  ///< its renewal watch on the handle of `generation` (0: none yet)
};

/// A node that may exist without a lease tracking it (a create whose reply never came, a failed
/// delete): the timer thread removes it once the session answers again.
struct Orphan {
  std::string path;   ///< the node, or the lock directory when `scan` is set
  std::string owner;  ///< owner token: a name prefix (scan) or the owner recorded in the data
  bool scan = false;
  std::uint64_t generation = 0;
  int attempts = 0;
  std::int64_t czxid = 0;  ///< the node's czxid when known (0: any node of that session)
};

/// A waiter's place in a lock's line (LeaseRequest::wait_in_line): the contended node an
/// acquisition left in place for the next attempt of its owner token, on session `generation`.
struct Waiting {
  std::string path;
  std::int64_t czxid = 0;
  std::uint64_t generation = 0;
  std::string ahead;  ///< the contender just ahead of it at the last listing (its full path)
};

/// One session and the leases it holds. Thread-safe.
class Core {
 public:
  /// Connects (bounded), starts the timer thread and registers the Core.
  static std::shared_ptr<Core> start(Config config, Deadline deadline);
  /// The Core of this process that holds `owner`'s lease, or null.
  static std::shared_ptr<Core> holding(const std::string& owner);

  explicit Core(Config config);
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  /// The owning store is gone: keep serving held leases, then close the session.
  void close();

  /// One attempt at `request`'s single lock in the lock directory `dir`: one create of an
  /// ephemeral sequential node with a listing pipelined behind it (README.md "Single lock").
  Acquired acquire_single(const LeaseRequest& request, const std::string& dir, Deadline deadline);
  /// One claim of a free slot of `request`'s group in `dir` (README.md "Group leases").
  Acquired acquire_slot(const LeaseRequest& request, const std::string& dir, Deadline deadline);
  /// Throws when the live holders in `children` of the lock directory (whose get is `dir`) have
  /// another shape than `request`: lock contenders against a group, a group of another size.
  void refuse_other_shape(const LeaseRequest& request, const Reply& dir,
                          const std::vector<std::string>& children) const;

  [[nodiscard]] Session& session() { return session_; }
  [[nodiscard]] const Config& config() const { return config_; }
  /// The ttl a lease gets: the requested one, capped by the negotiated session timeout.
  [[nodiscard]] Duration granted(Duration ttl) const;

  /// The data of `request`'s node for `slot`: owner, node id, granted ttl, slot (JSON).
  [[nodiscard]] std::string node_data(const LeaseRequest& request, int slot) const;
  /// Records a fresh lease and returns it.
  Lease track(const LeaseRequest& request, const std::string& path, const NodeStat& stat, int slot,
              TimePoint sent_at, std::uint64_t generation);
  /// The tracked lease of `owner` in the current session, if any.
  std::optional<Held> held(const std::string& owner);
  /// Whether this Core tracks `owner`'s lease on its current session (held() without the copy).
  bool holds(const std::string& owner);
  /// `request.owner`'s tracked lease of the lock directory `dir`, confirmed on the server and its
  /// local deadline reset to now + request.ttl (the same owner asking again); nullopt if not held.
  std::optional<Lease> reacquire(const LeaseRequest& request, const std::string& dir,
                                 Deadline deadline);
  /// Takes over `path`, a node of this session that an acquisition of `request.owner` created
  /// without seeing the reply: rewrites its data with a version check (so a concurrent orphan
  /// sweep, which deletes with a version check, can no longer remove it) and tracks it.
  std::optional<Lease> adopt(const LeaseRequest& request, const std::string& path,
                             const std::string& data, int slot, Deadline deadline);
  /// Orphaned node paths (not directory scans) recorded for `owner`.
  std::vector<std::string> orphans_of(const std::string& owner);
  /// While one lives, an acquisition of `owner` is under way on this Core: the orphan sweep
  /// leaves that owner's nodes alone (the acquisition may be creating, adopting or tracking one)
  /// and comes back to them after it.
  class Acquiring {
   public:
    Acquiring(Core& core, std::string owner);
    ~Acquiring();
    Acquiring(const Acquiring&) = delete;
    Acquiring& operator=(const Acquiring&) = delete;

   private:
    Core& core_;
    std::string owner_;
  };
  /// Confirms the session and the node in one round trip and extends the local deadline: a
  /// renew_batch of one.
  Renewal renew(const Lease& lease, Duration ttl, Deadline deadline);
  /// Renews each `requests[i]` for i in `indices` (leases this Core holds), into `out[i]`: each
  /// is checked (tracked, not kept, same czxid, its local deletion time not passed), then one
  /// renew_own_batch per session generation (one probe for the leases whose renewal watch is
  /// armed and quiet, a get for each other one); an `ok` moves its local deletion time to the
  /// local time taken before anything was sent plus its ttl. A lease without a reply by
  /// `deadline` gets the error, and its deletion time stays.
  void renew_batch(std::span<const RenewalRequest> requests,
                   const std::vector<std::size_t>& indices, Deadline deadline,
                   std::vector<BatchRenewal>& out);
  /// Deletes the node now, or lets the timer delete it `keep_for` from now.
  LeaseStatus release(const Lease& lease, Duration keep_for, Deadline deadline);
  /// Queues a node for removal by the timer thread.
  void add_orphan(Orphan orphan);
  /// Deletes `owner`'s node `path` (czxid `czxid`) on the session of `generation` only (a slot
  /// path can be reused); a failed delete is queued as an orphan.
  void withdraw(const std::string& path, std::int64_t czxid, const std::string& owner,
                std::uint64_t generation, Deadline deadline);
  /// Records `owner`'s place in line (one per owner token; the orphan sweep leaves it alone).
  void wait_in_line(const std::string& owner, Waiting place);
  /// `owner`'s place in line on the current session; one of an older session is dropped (its
  /// node went with that session).
  std::optional<Waiting> place_of(const std::string& owner);
  /// Removes and returns `owner`'s place in line, if any (of any session).
  std::optional<Waiting> leave_line(const std::string& owner);

 private:
  std::optional<Acquired> take_turn(const LeaseRequest& request, const std::string& dir,
                                    const Waiting& place, Deadline deadline);
  void refuse_if_group(const LeaseRequest& request, const std::string& dir,
                       const std::vector<std::string>& children, const Waiting& mine,
                       Deadline deadline);
  [[noreturn]] void refuse(const LeaseRequest& request, int held) const;
  void timer_loop();  // zk_timer.cpp
  void delete_due(const std::vector<Held>& due);
  void sweep(std::vector<Orphan> orphans);
  /// Deletes `orphan` if it is one; false when an acquisition of its owner is under way.
  bool remove_orphan(const Orphan& orphan, Deadline deadline);
  bool acquiring(const std::string& owner);

  Config config_;
  Session session_;
  std::mutex mu_;
  std::condition_variable cv_;
  using HeldMap = std::unordered_map<std::string, Held>;
  /// Under mu_: `owner`'s entry if it is of session `generation`; one of an older session is
  /// erased (its node went with that session) and end() returned.
  HeldMap::iterator current(const std::string& owner, std::uint64_t generation);
  HeldMap held_;  ///< by owner token (one hash, not ~14 compares)
  std::vector<Orphan> orphans_;
  std::unordered_map<std::string, Waiting> waiting_;  ///< places in line, by owner token
  std::vector<Orphan> sweeping_;          ///< the orphans the timer thread is working on
  std::map<std::string, int> acquiring_;  ///< owners with an acquisition under way, and how many
  /// When the sleeping timer thread wakes; min() while it is awake (it looks at every lease
  /// again before it sleeps). A change wakes it only when it makes a deletion due earlier than
  /// that: waking it for every change made each one scan every held lease. Under mu_.
  TimePoint timer_wake_ = TimePoint::min();
  bool sweep_now_ = false;  ///< an acquisition ended: sweep its owner's orphans without waiting
  bool closing_ = false;
  std::shared_ptr<Core> self_;  ///< keeps the Core alive while its timer thread runs
};

/// The sessions of one store: the base Core (inspect, candidates, and every lease when the
/// session timeout is fixed) and, with session_timeout=auto, one Core per distinct ttl (rounded
/// up to whole seconds, at most 8) whose session timeout is that ttl. Destroying it closes them
/// (a Core that still holds leases lingers until they end). Thread-safe.
class Sessions {
 public:
  /// Connects the base Core (bounded by twice the session timeout, at most 5 s).
  explicit Sessions(Config config);
  ~Sessions();

  [[nodiscard]] Core& base() { return *base_; }
  /// One attempt at `request` in the lock directory `dir`: the lease this owner holds already
  /// (asking again), else one attempt on the Core of its ttl.
  Acquired acquire(const LeaseRequest& request, const std::string& dir, Deadline deadline);
  /// The Core for a lease of `ttl`; a new one is connected by `deadline`.
  std::shared_ptr<Core> for_ttl(Duration ttl, Deadline deadline);
  /// Every Core, the base one first.
  std::vector<std::shared_ptr<Core>> all();

 private:
  Config config_;
  std::shared_ptr<Core> base_;
  std::mutex mu_;
  std::map<Duration, std::shared_ptr<Core>> by_timeout_;  ///< session_timeout=auto
};

}  // namespace leader::zookeeper
