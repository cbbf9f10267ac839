#pragma once
// The Redis implementation of LeaseStore. Key layout, fencing and failure modes: README.md.

#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "async_lane.hpp"
#include "cluster.hpp"
#include "connection.hpp"
#include "leader/detail/capabilities.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/lock_listing.hpp"
#include "leader/lock_watching.hpp"
#include "leader/store.hpp"
#include "pool.hpp"
#include "scripts.hpp"
#include "send.hpp"

namespace leader::redis {

/// Lease store on one Redis server (standalone; the key layout is also valid on a cluster).
/// Thread-safe: calls share a small connection pool; a watch has a connection of its own.
class RedisStore final : public LeaseStore,
                         public LockLister,
                         public LockWatcher,
                         public detail::AsyncAttempts {
 public:
  /// A store for `config`; connects lazily on the first call.
  explicit RedisStore(Config config);

  [[nodiscard]] std::string_view scheme() const override;
  [[nodiscard]] Capabilities capabilities() noexcept override {
    return {.watch = this, .listing = this, .async = this};
  }
  LEADER_LEASE_STORE_OPERATIONS;  // the LeaseStore operations, store_support.hpp
  /// The renew script of every lease pipelined on one pooled connection (all commands written,
  /// then all replies read), in chunks of at most kBatchChunk, with one WAIT after a chunk that
  /// renewed something when `?wait_replicas=` is set. On a cluster, grouped by the node serving
  /// each lease's slot, one pipeline per node; a MOVED or ASK reply (not executed) is renewed
  /// again alone by renew(). Commands without a reply when the connection fails or the deadline
  /// passes get that error (unknown outcome). README.md, section "Batched renewals".
  [[nodiscard]] std::vector<BatchRenewal> renew_batch(std::span<const RenewalRequest> requests,
                                                      Deadline deadline) override;
  /// Most renewals one pipeline of renew_batch carries.
  static constexpr std::size_t kBatchChunk = 1000;
  /// Held locks under `prefix`: SCAN (never KEYS) for lease keys `<key prefix><prefix>*` and
  /// group size keys `{<key prefix><prefix>*}:slots`, then inspect() of each name found. The
  /// SCAN walks the whole database (MATCH filters on the server), in batches of 1000 keys.
  [[nodiscard]] std::vector<LockState> list_locks(std::string_view prefix,
                                                  Deadline deadline) override;

  /// Waits for a message on the lock's channel (changes_channel()), which the acquire, release
  /// and shortening renew scripts publish on, on a subscriber connection of its own, and
  /// re-reads the lock after each (re)subscription, each message and at the earliest holder's
  /// expiry (an expiry publishes nothing). watch.cpp; README.md, section Watching.
  [[nodiscard]] LockState watch(std::string_view lock, const LockState& last_seen,
                                Deadline deadline, const std::stop_token& stop) override;

  /// Asynchronous attempts: on the store's AsyncLane (async_lane.hpp),
  /// standalone or behind Sentinel, without `?wait_replicas=`; not on a cluster.
  [[nodiscard]] bool attempts_async() const noexcept override;
  /// try_acquire's script call (again with more keys when the lock was last a larger group),
  /// pipelined with the other attempts queued on the lane (send_calls(), as send()).
  void try_acquire_async(const LeaseRequest& request, Deadline deadline,
                         std::function<void(Attempt)> done) override;
  /// A wait on the lane for the lock's changes channel (the scripts' PUBLISH).
  std::uint64_t wait_change(std::string_view lock, std::uint64_t seen, Deadline until,
                            Deadline last, std::uint64_t order,
                            std::function<void(bool changed)> woken) override;
  void cancel_wait(std::uint64_t id) noexcept override;
  /// The lane's counters (zero before its first use).
  [[nodiscard]] AsyncLane::Stats async_stats() const;

  /// The connection pool (for statistics).
  [[nodiscard]] const ConnectionPool& pool() const { return pool_; }

  /// The key of slot `slot` of `lock`: `<key prefix><lock>` for slot 0 (the single-lease key),
  /// else `{<key prefix><lock>}:slot:<slot>`.
  [[nodiscard]] std::string slot_key(std::string_view lock, int slot) const;
  /// `{<key prefix><name>}:<suffix>`, hash-tagged so that a lock's keys and channel share its
  /// cluster slot: a lock's fence counter (`fence`), its size (`slots`: "0" single leader, "N" a
  /// group of N slots), a group's candidate registry (`candidates`).
  [[nodiscard]] std::string tagged_key(std::string_view name, std::string_view suffix) const;
  /// The pub/sub channel the scripts publish `lock`'s holder changes on.
  [[nodiscard]] std::string changes_channel(std::string_view lock) const {
    return tagged_key(lock, "changed");
  }

 private:
  /// The one send path (send.cpp) of a call: `command` (routed by its first key on a cluster,
  /// following MOVED and ASK at most 3 times: neither executed it, so sending it to the node
  /// named replays nothing) through pipeline(); an error reply goes to reject(), naming
  /// `operation`, and a Sent's error is thrown. `wait`: as pipeline()'s.
  Sent send(const Command& command, std::string_view operation, Deadline deadline,
            bool wait = false);
  /// send() of `script` with `keys` and `args`: its reply.
  Reply eval(const Script& script, const std::vector<std::string>& keys,
             const std::vector<std::string>& args, Deadline deadline) {
    return send(script_call(script, keys, args), "a script", deadline).reply;
  }
  /// send() of a plain command, routed by its key (`command[1]`): its reply.
  Reply command(const Command& command, Deadline deadline) {
    return send(command, command.front(), deadline).reply;
  }
  /// `commands` as one pipeline on `pool` (send_calls(): a flushed script is sent again by its
  /// source; after an ASKING when `asking`), retried as ConnectionPool::run does; with `wait`
  /// and `?wait_replicas=`, then one WAIT on the same connection when a reply changed
  /// something. Error replies are left to the caller; a failure is reported per command.
  std::vector<Sent> pipeline(ConnectionPool& pool, const std::vector<Command>& commands,
                             Deadline deadline, bool wait, bool asking = false);
  /// Throws the error of a reply's `text`, after what it says changed: READONLY (the primary was
  /// demoted: Sentinel asks again), CLUSTERDOWN (the slot map is read again).
  [[noreturn]] void reject(const std::string& text, std::string_view operation);
  /// After a call failed with `e` on a cluster node: unavailable or deadline_exceeded may be a
  /// failover, so the next call reads the slot map again (nothing is replayed elsewhere).
  void node_failed(const BackendError& e);
  /// The acquire script's `reply` to `r` declaring `declared` slot keys, sent at `sent`: the
  /// lease or contention, with `declared` 0; or, when the lock was last a larger group, empty
  /// with `declared` the slot keys to declare asking again.
  Acquired granted(const LeaseRequest& r, const redisReply* reply, TimePoint sent, int& declared);
  /// A grant that too few replicas acknowledged (`?wait_replicas=`): released at once (best
  /// effort; otherwise it expires after its ttl), then BackendError(deadline_exceeded).
  [[noreturn]] void not_replicated(const Lease& lease, int acked, Deadline deadline);
  /// The renew script's call for `lease` and `ttl` (renew and renew_batch; renewals.cpp).
  [[nodiscard]] Command renew_call(const Lease& lease, Duration ttl) const;
  /// What the renew script's call for `lease` and `ttl` came back with, as renew() returns it.
  [[nodiscard]] Renewal renewal(const Lease& lease, Duration ttl, const Sent& sent) const;
  /// The pool serving `key`: the one pool, or on a cluster the primary of its slot.
  ConnectionPool& pool_for(const std::string& key, Deadline deadline);

  /// The lane, started on first use.
  AsyncLane& lane();
  /// One asynchronous acquire attempt declaring `declared` slot keys.
  void submit_acquire(const LeaseRequest& r, int declared, Deadline deadline,
                      const std::shared_ptr<std::function<void(Attempt)>>& done);

  std::string scheme_;
  ConnectionPool pool_;               // the one server (standalone, Sentinel); config holder
  std::unique_ptr<Cluster> cluster_;  // Cluster mode
  mutable std::mutex lane_mu_;
  std::unique_ptr<AsyncLane> lane_;  // after pool_: stopped before the pool closes
};

}  // namespace leader::redis
