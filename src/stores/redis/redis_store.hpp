#pragma once
// The Redis implementation of LeaseStore: the lease recipe (key layout, scripts, fencing and
// failure modes: README.md) on the Redis client of src/clients/redis.

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config.hpp"
#include "leader/detail/capabilities.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/lock_listing.hpp"
#include "leader/lock_watching.hpp"
#include "leader/store.hpp"
#include "redis/client.hpp"
#include "scripts.hpp"

namespace leader::redis {

/// Lease store on one Redis server (standalone; the key layout is also valid on a cluster).
/// Thread-safe: calls share the client's connection pool; a watch has a connection of its own.
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
  /// The renew script of every lease through Client::send_each: pipelined on one pooled
  /// connection per node (all commands written, then all replies read), in chunks of at most
  /// Client::kPipelineChunk, with one WAIT after a chunk that renewed something when
  /// `?wait_replicas=` is set; a MOVED or ASK reply (not executed) is renewed again alone.
  /// Commands without a reply when the connection fails or the deadline passes get that error
  /// (unknown outcome). README.md, section "Batched renewals".
  [[nodiscard]] std::vector<BatchRenewal> renew_batch(std::span<const RenewalRequest> requests,
                                                      Deadline deadline) override;
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

  /// Asynchronous attempts: on the client's AsyncLane (Client::lane_available(): standalone or
  /// behind Sentinel, without `?wait_replicas=`; not on a cluster).
  [[nodiscard]] bool attempts_async() const noexcept override;
  /// try_acquire's script call (again with more keys when the lock was last a larger group),
  /// pipelined with the other attempts queued on the lane (Client::submit).
  void try_acquire_async(const LeaseRequest& request, Deadline deadline,
                         std::function<void(Attempt)> done) override;
  /// A wait on the lane for the lock's changes channel (the scripts' PUBLISH).
  std::uint64_t wait_change(std::string_view lock, std::uint64_t seen, Deadline until,
                            Deadline last, std::uint64_t order,
                            std::function<void(bool changed)> woken) override;
  void cancel_wait(std::uint64_t id) noexcept override;
  /// The lane's counters (zero before its first use).
  [[nodiscard]] AsyncLane::Stats async_stats() const { return client_.lane_stats(); }

  /// The connection pool (for statistics).
  [[nodiscard]] const ConnectionPool& pool() const { return client_.pool(); }

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
  /// Client::send() of `script` with `keys` and `args`: its reply.
  Reply eval(const Script& script, const std::vector<std::string>& keys,
             const std::vector<std::string>& args, Deadline deadline) {
    return client_.send(script_call(script, keys, args), "a script", deadline).reply;
  }
  /// Client::send() of a plain command, routed by its key (`command[1]`): its reply.
  Reply command(const Command& command, Deadline deadline) {
    return client_.send(command, command.front(), deadline).reply;
  }
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
  /// One asynchronous acquire attempt declaring `declared` slot keys.
  void submit_acquire(const LeaseRequest& r, int declared, Deadline deadline,
                      const std::shared_ptr<std::function<void(Attempt)>>& done);

  std::string scheme_;
  std::string prefix_;  // Config::prefix
  Client client_;       // the connection settings, the rest of Config
};

}  // namespace leader::redis
