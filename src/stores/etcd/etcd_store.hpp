#pragma once
// leader::etcd: leases in etcd v3, laid out as etcd's own concurrency.Mutex (see README.md).

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config.hpp"
#include "gateway.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/lock_listing.hpp"
#include "leader/lock_watching.hpp"
#include "leader/store.hpp"

namespace leader::etcd {

/// One key read back from etcd.
struct KeyValue {
  std::string key;
  std::string value;
  std::int64_t create_revision = 0;
  std::int64_t mod_revision = 0;
  std::int64_t lease = 0;
};

/// The etcd store. Thread-safe; holds no lease state of its own (renew and release find the
/// holder key from the lease's lock, owner, slot and fencing token).
class EtcdStore : public LeaseStore, public LockLister, public LockWatcher {
 public:
  /// A store over the cluster described by `config`; no I/O until the first call.
  explicit EtcdStore(Config config);

  [[nodiscard]] std::string_view scheme() const override { return scheme_; }
  LEADER_LEASE_STORE_OPERATIONS;  // the LeaseStore operations, store_support.hpp
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

  /// The gateway client (tests and benchmarks issue raw etcd calls through it).
  [[nodiscard]] Gateway& gateway() { return gateway_; }
  /// `<prefix>/<lock>/`: the key prefix of a lock, as `etcdctl lock <prefix>/<lock>` uses it.
  [[nodiscard]] std::string lock_prefix(std::string_view lock) const;

 private:
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
  };
  Claim claim_single(const LeaseRequest& request, std::int64_t lease_id, TimePoint sent,
                     Deadline deadline);
  Claim claim_group(const LeaseRequest& request, std::int64_t lease_id, TimePoint sent,
                    Deadline deadline);
  std::optional<Lease> attached(const LeaseRequest& request, std::int64_t lease_id,
                                Deadline deadline);
  std::optional<Lease> adopt(const LeaseRequest& request, const KeyValue& kv, Deadline deadline);
  void refuse_other_shape(const LeaseRequest& request, const Snapshot& seen) const;
  [[nodiscard]] std::string holder_key(const Lease& lease) const;
  [[nodiscard]] std::string slots_key(std::string_view lock) const;
  std::int64_t grant(std::int64_t id, std::int64_t ttl_s, Deadline deadline);
  bool grant_own(std::int64_t id, std::int64_t ttl_s, Deadline deadline);
  void revoke_quietly(std::int64_t id, Deadline deadline) noexcept;
  bool move_key(const std::string& key, std::int64_t create_revision, std::int64_t ttl_s,
                Deadline deadline);
  std::optional<KeyValue> get(const std::string& key, Deadline deadline);
  std::vector<KeyValue> list(const std::string& prefix, Deadline deadline,
                             std::int64_t* revision = nullptr);
  LockState read_lock(std::string_view lock, Deadline deadline, std::int64_t* revision);
  std::string candidate_prefix(std::string_view group) const;

  Gateway gateway_;
  std::string scheme_;
  /// The largest TTL (s) the server granted above a smaller one asked: its minimum lease TTL
  /// (etcd raises every grant to 1.5 x the election timeout, rounded up to seconds). A renewal
  /// does not move a lease that cannot get any shorter.
  std::atomic<std::int64_t> min_ttl_{1};
};

/// Decodes one `kvs` entry of a Range reply.
[[nodiscard]] KeyValue decode_kv(const nlohmann::json& kv);
/// `<prefix>/<lock>/slot-<i>`'s key suffix for slot `i`.
[[nodiscard]] std::string slot_name(int slot);
/// The slot index of a key suffix `slot-<i>`, or nullopt for any other name.
[[nodiscard]] std::optional<int> slot_of(std::string_view name);
/// The owner token recorded in a holder key's value ("" for etcdctl's empty values).
[[nodiscard]] std::string owner_of(const KeyValue& kv);
/// The lowest slots of a group lock are claimed in one nested Txn of at most this many levels.
inline constexpr int kSlotsPerTxn = 16;

}  // namespace leader::etcd
