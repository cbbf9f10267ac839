#pragma once
// leader::etcd: leases in etcd v3, laid out as etcd's own concurrency.Mutex (see README.md).

#include <cstdint>
#include <memory>
#include <string>

#include "config.hpp"
#include "gateway.hpp"
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
class EtcdStore : public LeaseStore {
 public:
  /// A store over the cluster described by `config`; no I/O until the first call.
  explicit EtcdStore(Config config);

  [[nodiscard]] std::string_view scheme() const override { return scheme_; }
  Acquired try_acquire(const LeaseRequest& request, Deadline deadline) override;
  [[nodiscard]] LeaseStatus renew(Lease& lease, Duration ttl, Deadline deadline) override;
  LeaseStatus release(const Lease& lease, Duration keep_for, Deadline deadline) override;
  [[nodiscard]] LockState inspect(std::string_view lock, Deadline deadline) override;
  void put_candidate(std::string_view group, const Candidate& candidate, Duration ttl,
                     Deadline deadline) override;
  [[nodiscard]] std::vector<Candidate> list_candidates(std::string_view group,
                                                       Deadline deadline) override;
  void remove_candidate(std::string_view group, std::string_view node_id,
                        Deadline deadline) override;

  /// The gateway client (tests and benchmarks issue raw etcd calls through it).
  [[nodiscard]] Gateway& gateway() { return gateway_; }
  /// `<prefix>/<lock>/`: the key prefix of a lock, as `etcdctl lock <prefix>/<lock>` uses it.
  [[nodiscard]] std::string lock_prefix(std::string_view lock) const;

 private:
  Acquired acquire_single(const LeaseRequest& request, std::int64_t lease_id, Deadline deadline);
  Acquired acquire_group(const LeaseRequest& request, std::int64_t lease_id, Deadline deadline);
  [[nodiscard]] std::string holder_key(const Lease& lease) const;
  std::int64_t grant(std::int64_t id, std::int64_t ttl_s, Deadline deadline);
  void revoke_quietly(std::int64_t id, Deadline deadline) noexcept;
  bool move_key(const std::string& key, std::int64_t create_revision, std::int64_t ttl_s,
                Deadline deadline);
  std::optional<KeyValue> get(const std::string& key, Deadline deadline);
  std::vector<KeyValue> list(const std::string& prefix, Deadline deadline);
  std::string candidate_prefix(std::string_view group) const;

  Gateway gateway_;
  std::string scheme_;
};

/// Decodes one `kvs` entry of a Range reply.
[[nodiscard]] KeyValue decode_kv(const nlohmann::json& kv);
/// `<prefix>/<lock>/slot-<i>`'s key suffix for slot `i`.
[[nodiscard]] std::string slot_name(int slot);
/// The lowest slots of a group lock are claimed in one nested Txn of at most this many levels.
inline constexpr int kSlotsPerTxn = 16;

}  // namespace leader::etcd
