#pragma once
// leader::consul: leases as Consul sessions holding KV locks (see README.md for the data model
// and the "Safety" argument).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/lock_listing.hpp"
#include "leader/lock_watching.hpp"
#include "leader/store.hpp"

namespace leader::consul {

/// Flags `consul lock` and the Go api.Lock put on a lock key (LockFlagValue, api/lock.go).
inline constexpr std::uint64_t kLockFlag = 0x2ddccbc058a50c18ULL;

/// What the store writes into a holder key's value (JSON).
struct HolderValue {
  std::string owner;
  std::string node_id;
  int slots = 0;
  std::uint64_t token = 0;
  Duration ttl{};  ///< the TTL of the session that holds the key
};

/// One key of a lock that can be held: `.lock` (slot -1: a single leader) or `.slot-<i>`.
struct Holding {
  Entry entry;
  int slot = -1;
  std::optional<HolderValue> value;  ///< nullopt when not written by this store (`consul lock`)
  [[nodiscard]] bool live() const { return !entry.session.empty(); }
};

/// Everything under one lock's prefix, read in one request.
struct LockView {
  std::vector<Holding> keys;
  std::optional<Entry> fence;
  std::uint64_t index = 0;  ///< X-Consul-Index of the read
};

/// The Consul store. Thread-safe; keeps no lease state of its own (a lease's session is found
/// from its holder key).
class ConsulStore : public LeaseStore, public LockLister, public LockWatcher {
 public:
  /// A store over the agent described by `config`; no I/O until the first call.
  explicit ConsulStore(const Config& config);

  [[nodiscard]] std::string_view scheme() const override { return "consul"; }

  [[nodiscard]] Capabilities capabilities() noexcept override {
    return {.watch = this, .listing = this};
  }
  LEADER_LEASE_STORE_OPERATIONS;  // the LeaseStore operations, store_support.hpp
  /// Held locks under `prefix`: one recursive KV read of `<key prefix>/<prefix>` (':' as '/'),
  /// the lock names taken from their holder keys (`.lock`, `.slot-<i>`), then inspect() of each.
  [[nodiscard]] std::vector<LockState> list_locks(std::string_view prefix,
                                                  Deadline deadline) override;

  /// Reads the lock (as inspect()) and, while its holders equal `last_seen`, repeats the read as
  /// a blocking query (`?index=` of the last read, `wait=` the time left) on a connection of its
  /// own. A session that expires moves its key's ModifyIndex, so an expiry wakes it too.
  [[nodiscard]] LockState watch(std::string_view lock, const LockState& last_seen,
                                Deadline deadline, const std::stop_token& stop) override;

  /// The API client (tests and the benchmark issue raw Consul calls through it).
  [[nodiscard]] Api& api() { return api_; }
  /// `<prefix>/<lock with ':' as '/'>`: the key prefix of a lock (`consul lock` takes this path).
  [[nodiscard]] std::string lock_path(std::string_view lock) const;
  /// The key that holds slot `slot` of a lock (`.lock` for a single leader).
  [[nodiscard]] std::string holder_key(std::string_view lock, int slots, int slot) const;

 private:
  struct Renewed {
    bool ok = false;
    Duration ttl{};
  };
  Renewed renew_lease(const Lease& lease, Duration ttl, Deadline deadline);
  Renewed move_to_new_session(const Lease& lease, const Entry& held, HolderValue value,
                              Duration ttl, Deadline deadline);
  std::optional<Lease> adopt(const LeaseRequest& request, const Holding& mine, Deadline deadline);
  std::optional<Lease> claim(const LeaseRequest& request, const LockView& view,
                             std::string& session, Deadline deadline, bool& delayed);
  LockView read(std::string_view lock, Deadline deadline);
  LockView view_of(std::string_view lock, Tree tree) const;
  static LockState state_of(std::string_view lock, const LockView& view);
  std::optional<Holding> own_key(const Lease& lease, Deadline deadline);
  [[nodiscard]] Duration session_ttl(Duration asked) const;
  /// The LockDelay of a session of TTL `ttl`: the URI's lock_delay, or (auto) the TTL itself
  /// capped at Consul's 60 s.
  [[nodiscard]] Duration lock_delay_for(Duration ttl) const;
  /// The ttl a holder may act on for a session of TTL `ttl` (or the TTL a renew answered):
  /// at most the session's lock-delay, so a takeover after an early invalidation (node
  /// deregistered) comes after the holder's local deadline. README.md, "Lock-delay".
  [[nodiscard]] Duration granted_for(Duration ttl, Duration session_ttl) const;
  std::string new_session(const std::string& name, Duration ttl, Duration lock_delay,
                          Deadline deadline);
  [[nodiscard]] std::string candidate_key(std::string_view group, std::string_view node) const;

  Api api_;
};

/// The JSON value of a holder key.
[[nodiscard]] std::string encode_holder(const HolderValue& v);
/// Parses a holder key's value; nullopt for values this store did not write.
[[nodiscard]] std::optional<HolderValue> decode_holder(std::string_view text);
/// The slot of a key's last segment: -1 for ".lock", i for ".slot-<i>", nullopt otherwise.
[[nodiscard]] std::optional<int> slot_of(std::string_view last_segment);
/// The next fencing token: the fence's counter + 1, or (no fence yet) the read's index + 1.
[[nodiscard]] std::uint64_t next_token(const LockView& view);
/// Throws failed_precondition when a live holder has another shape than `slots`.
void check_shape(const LockView& view, const std::string& lock, int slots);

}  // namespace leader::consul
