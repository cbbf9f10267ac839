#pragma once
// leader::etcd: leases in etcd v3, laid out as etcd's own concurrency.Mutex (see README.md).

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "clients/etcd/gateway.hpp"
#include "clients/etcd/replies.hpp"
#include "config.hpp"
#include "leader/detail/capabilities.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/lock_listing.hpp"
#include "leader/lock_watching.hpp"
#include "leader/store.hpp"

namespace leader::etcd {

/// The etcd store. Thread-safe. Holder keys are attached to session leases, one per distinct
/// ttl (whole seconds) per store object, granted on first use and kept alive by the renewals
/// (README.md), unless a key this store no longer claims may be on them (abandon_sessions());
/// renew and release still find the holder key from the lease's lock, owner, slot
/// and fencing token alone, so a lease works the same through another store object. Fair waiters
/// keep their contender key as their place in the Mutex's line (README.md "Waiting in line").
class EtcdStore : public LeaseStore,
                  public LockLister,
                  public LockWatcher,
                  public detail::WaitsInLine {
 public:
  /// A store over the cluster described by `config`; no I/O until the first call.
  explicit EtcdStore(Config config);
  /// Revokes, quietly and within about a second, the session leases that carry no key any more.
  ~EtcdStore() override;
  EtcdStore(const EtcdStore&) = delete;
  EtcdStore& operator=(const EtcdStore&) = delete;

  [[nodiscard]] std::string_view scheme() const override { return scheme_; }

  [[nodiscard]] Capabilities capabilities() noexcept override {
    return {.watch = this, .listing = this, .line = this};
  }
  LEADER_LEASE_STORE_OPERATIONS;  // the LeaseStore operations, store_support.hpp
  /// One LeaseKeepAlive per session lease the keys of `requests` are attached to, then every key
  /// verified (create revision = token, attached to a lease kept alive in this call) by Range ops
  /// in Txns of at most 128 (README.md, "Batched renewals"). Leases whose key is elsewhere, or
  /// whose ttl has no session here, go through renew().
  [[nodiscard]] std::vector<BatchRenewal> renew_batch(std::span<const RenewalRequest> requests,
                                                      Deadline deadline) override;
  /// Held locks under `prefix`: one Range over `<key prefix>/<prefix>` (the holder keys of every
  /// matching lock), then inspect() of each lock found.
  [[nodiscard]] std::vector<LockState> list_locks(std::string_view prefix,
                                                  Deadline deadline) override;

  /// Reads the lock (as inspect()) and, while its holders equal `last_seen`, Watches the lock's
  /// key prefix from the revision of that read on a connection of its own (the gateway's streamed
  /// /v3/watch); any event there (a key put or deleted, a lease expiring deletes its key) re-reads.
  /// Returns at a change, at `deadline` or on `stop` (then the last read, possibly unchanged).
  [[nodiscard]] LockState watch(std::string_view lock, const LockState& last_seen,
                                Deadline deadline, const std::stop_token& stop) override;

  /// Deletes `request.owner`'s contender key of `request.lock` if it is still in line (a Txn
  /// comparing the key's value); a removal that fails is kept and sent again at the store's next
  /// acquire or renewal, and ends with its session at the latest (abandon_sessions()).
  void leave_line(const LeaseRequest& request, Deadline deadline) noexcept override;
  /// One Range of the lock's keys: nullopt without a key of `request.owner`, true when it is the
  /// lowest (the owner's turn: ask now); else a Watch of the key just ahead of it (the next lower
  /// create revision) from that Range's revision, until it is deleted (true), `deadline` or `stop`
  /// (false).
  [[nodiscard]] std::optional<bool> wait_turn(const LeaseRequest& request, Deadline deadline,
                                              const std::stop_token& stop) override;

  /// The gateway client (tests and benchmarks issue raw etcd calls through it).
  [[nodiscard]] Gateway& gateway() { return gateway_; }
  /// `<prefix>/<lock>/`: the key prefix of a lock, as `etcdctl lock <prefix>/<lock>` uses it.
  [[nodiscard]] std::string lock_prefix(std::string_view lock) const;
  /// The id of this store's session lease of `ttl_s` seconds, 0 when it has none (tests).
  [[nodiscard]] std::int64_t session_lease(std::int64_t ttl_s);

 private:
  /// A session lease: one per ttl (whole seconds), shared by every key acquired with that ttl.
  struct Session {
    std::int64_t id = 0;       ///< 0: none yet (or dropped)
    std::int64_t granted = 0;  ///< the TTL (s) the server granted or last kept alive
    TimePoint sent{};  ///< local time read before the grant/keep-alive that last refreshed it
  };
  struct SessionSlot {
    std::timed_mutex refresh;  ///< single-flight grant / keep-alive
    std::mutex mu;             ///< guards `s`
    Session s;
  };
  SessionSlot& slot(std::int64_t ttl_s);
  Session current(std::int64_t ttl_s);
  void refreshed(std::int64_t ttl_s, std::int64_t id, std::int64_t granted, TimePoint sent);
  void drop(std::int64_t ttl_s, std::int64_t id);
  /// The session of `ttl_s`, granted or kept alive first when it would not cover `want` from
  /// `now` (more than a tenth or a second short), or when `fresh_since` is set and the session was
  /// last refreshed before it. Throws as the grant / keep-alive does.
  Session ensure(std::int64_t ttl_s, Duration want, TimePoint now, Deadline deadline,
                 std::optional<TimePoint> fresh_since = std::nullopt);
  /// LeaseKeepAlive of `id`: the TTL (s) it was restored to, <= 0 when the lease is gone;
  /// nullopt (nothing sent) when this store abandoned `id` (abandon_sessions()).
  std::optional<std::int64_t> keep_alive(std::int64_t id, Deadline deadline);
  /// After a write whose outcome is unknown (a release, a claim, a place in line left): the key
  /// it concerned may sit on one of this store's session leases with nobody claiming it, and the
  /// renewals of the other keys there would keep it alive. So every session lease of this store
  /// is dropped and never kept alive again: each expires on the server its TTL after its last
  /// keep-alive, and the keys still held move to new sessions at their next renewal (README.md,
  /// "Failure modes").
  void abandon_sessions() noexcept;
  /// Whether this store abandoned the session lease `id`.
  bool abandoned(std::int64_t id);
  /// POSTs a Txn that attaches keys to a lease; nullopt when the server no longer has that lease.
  std::optional<nlohmann::json> txn_on_lease(const nlohmann::json& txn, Deadline deadline);
  /// renew(), its keep-alives and moves dated from `start` (renew_batch: the batch's start).
  Renewal renew_from(const Lease& lease, Duration ttl, TimePoint start, Deadline deadline);
  /// Moves `key` (if its create revision is `create_revision`) onto our session of `ttl` and
  /// reports the ttl it now holds for, or lost.
  Renewal move_to_session(const std::string& key, std::int64_t create_revision, Duration ttl,
                          TimePoint start, Deadline deadline);

  /// What a failed claim saw in the same Txn: the lock's keys by create revision (for a single
  /// lock only the lowest, its holder) and the group size recorded for the lock, if any.
  struct Snapshot {
    std::vector<KeyValue> keys;
    std::optional<int> slots;
  };
  /// The outcome of one claim: the lease, or what the server held instead.
  struct Claim {
    std::optional<Lease> lease;
    Snapshot seen;
    /// A fair waiter's own key after the claim (kept or put: its place in line), if any.
    std::optional<KeyValue> mine;
  };
  /// nullopt: the session lease `lease_id` is gone on the server (nothing was written).
  std::optional<Claim> claim_single(const LeaseRequest& request, std::int64_t lease_id,
                                    TimePoint sent, Deadline deadline);
  std::optional<Claim> claim_group(const LeaseRequest& request, std::int64_t lease_id,
                                   TimePoint sent, Deadline deadline);
  /// release(): one Txn deleting the key, or its move to a lease of keep_for.
  LeaseStatus release_key(const Lease& lease, Duration keep_for, Deadline deadline);
  /// The lease `kv` (this owner's key) holds, renewed; abandon_sessions() when that fails.
  std::optional<Lease> adopt(const LeaseRequest& request, const KeyValue& kv, Deadline deadline);
  void refuse_other_shape(const LeaseRequest& request, const Snapshot& seen) const;
  [[nodiscard]] std::string holder_key(const Lease& lease) const;
  [[nodiscard]] std::string slots_key(std::string_view lock) const;
  /// A new lease of `ttl_s` seconds (a session's, a candidate's, a keep_for's), dated from a
  /// local time read before it was sent.
  Session grant(std::int64_t ttl_s, Deadline deadline);
  void revoke_quietly(std::int64_t id, Deadline deadline) noexcept;
  /// nullopt: `lease` is gone on the server; else whether the key was ours and moved.
  std::optional<bool> move_key(const std::string& key, std::int64_t create_revision,
                               std::int64_t lease, Deadline deadline);
  std::optional<KeyValue> get(const std::string& key, Deadline deadline);
  std::vector<KeyValue> list(const std::string& prefix, Deadline deadline,
                             std::int64_t* revision = nullptr);
  LockState read_lock(std::string_view lock, Deadline deadline, std::int64_t* revision);
  std::string candidate_prefix(std::string_view group) const;
  /// The key and value of `request`'s contender key (a single lease).
  [[nodiscard]] std::pair<std::string, std::string> contender(const LeaseRequest& request) const;
  /// Deletes the contender key `key` if its value is still `value`; throws as a Txn does.
  void delete_contender(const std::string& key, const std::string& value, Deadline deadline);
  /// Sends again the removals of places in line that failed (leave_line), within `deadline`.
  void retry_leaving(Deadline deadline) noexcept;

  Gateway gateway_;
  std::string prefix_;  ///< Config::prefix
  std::string scheme_;
  /// The largest TTL (s) the server granted above a smaller one asked: its minimum lease TTL
  /// (etcd raises every grant to 1.5 x the election timeout, rounded up to seconds). A renewal
  /// does not move a lease that cannot get any shorter.
  std::atomic<std::int64_t> min_ttl_{1};
  std::mutex sessions_mu_;
  std::map<std::int64_t, std::unique_ptr<SessionSlot>> sessions_;  // by ttl (s)
  /// Session leases abandoned (abandon_sessions()), each with the time after which the server
  /// has certainly expired it (then forgotten).
  std::mutex abandoned_mu_;
  std::map<std::int64_t, TimePoint> abandoned_;
  std::atomic<bool> any_abandoned_{false};
  /// Range ops per verifying Txn of renew_batch: etcd's default --max-txn-ops, halved when a
  /// server refuses "too many operations".
  std::atomic<std::size_t> verify_chunk_{128};
  /// Places in line whose removal failed (key, value), sent again by retry_leaving().
  std::mutex leaving_mu_;
  std::vector<std::pair<std::string, std::string>> leaving_;
  std::atomic<bool> any_leaving_{false};
};

/// The lease id used for an acquisition by `owner`: its first 15 hex digits (60 bits, never 0),
/// or a 60-bit FNV-1a hash when the owner is not hex. Deterministic, so renew and release need
/// no client-side state.
[[nodiscard]] std::int64_t lease_id_for_owner(std::string_view owner);
/// How long a lease last refreshed `granted` s after local time `sent` still lives from `now`, at
/// least: the server restarted its TTL when it ran that grant or keep-alive, after `sent`.
[[nodiscard]] Duration covered(TimePoint sent, std::int64_t granted, TimePoint now);
/// `<prefix>/<lock>/slot-<i>`'s key suffix for slot `i`.
[[nodiscard]] std::string slot_name(int slot);
/// The slot index of a key suffix `slot-<i>`, or nullopt for any other name.
[[nodiscard]] std::optional<int> slot_of(std::string_view name);
/// The lease granted for `request`: key create revision `token`, `slot`, dated `sent`.
[[nodiscard]] Lease granted(const LeaseRequest& request, std::int64_t token, int slot,
                            TimePoint sent);
/// The owner token recorded in a holder key's value ("" for etcdctl's empty values).
[[nodiscard]] std::string owner_of(const KeyValue& kv);
/// The group size recorded for a lock, from the Range of its slots key.
[[nodiscard]] std::optional<int> recorded_slots(const std::vector<KeyValue>& kvs);
/// Fills `h`'s node id and owner from the value of holder key `name` (`etcdctl lock` writes
/// none: the owner is then the key name).
void read_holder_value(const std::string& value, const std::string& name, Holder& h);
/// A candidate value written by this library, or nullopt for any other value.
[[nodiscard]] std::optional<Candidate> decode_candidate(const std::string& text);
/// The lowest slots of a group lock are claimed in one nested Txn of at most this many levels.
inline constexpr int kSlotsPerTxn = 16;

}  // namespace leader::etcd
