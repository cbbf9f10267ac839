#pragma once
// The ZooKeeper store: a lease is an ephemeral znode plus the session that owns it. See README.md
// for the data model, how ttl/renew/release map onto sessions, and the failure modes.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "leader/detail/capabilities.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/lock_listing.hpp"
#include "leader/lock_watching.hpp"
#include "leader/store.hpp"
#include "zk_config.hpp"
#include "zk_core.hpp"

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

/// LeaseStore over one ZooKeeper session. Thread-safe.
class ZooKeeperStore final : public LeaseStore,
                             public LockLister,
                             public LockWatcher,
                             public detail::WaitsInLine {
 public:
  explicit ZooKeeperStore(Config config);
  ~ZooKeeperStore() override;
  ZooKeeperStore(const ZooKeeperStore&) = delete;
  ZooKeeperStore& operator=(const ZooKeeperStore&) = delete;

  [[nodiscard]] std::string_view scheme() const override { return config_.scheme; }
  [[nodiscard]] Capabilities capabilities() noexcept override {
    return {.watch = this, .listing = this, .line = this};
  }
  LEADER_LEASE_STORE_OPERATIONS;  // the LeaseStore operations, store_support.hpp
  /// renew() of every lease at once: grouped by the Core (session) that holds each one, then one
  /// pipelined round of exists requests per session (Core::renew_batch). README.md, section
  /// "Batched renewals".
  [[nodiscard]] std::vector<BatchRenewal> renew_batch(std::span<const RenewalRequest> requests,
                                                      Deadline deadline) override;
  /// Held locks under `prefix`: the children of the lock root whose names start with `prefix`,
  /// then inspect() of each (lock directories stay after release: listed only while held).
  [[nodiscard]] std::vector<LockState> list_locks(std::string_view prefix,
                                                  Deadline deadline) override;
  /// Reads the lock (as inspect()) with a child watch left on its directory (an exists watch
  /// while it has none) and, while its holders equal `last_seen`, waits for the watch, then reads
  /// and arms again (zk_watch.cpp). Returns at a change, at `deadline` or on `stop` (then the
  /// last read, possibly unchanged); a session event wakes it, and it reads again once the
  /// session answers (a new session after an expiry) or throws as inspect() would.
  [[nodiscard]] LockState watch(std::string_view lock, const LockState& last_seen,
                                Deadline deadline, const std::stop_token& stop) override;
  /// Deletes the node `request.owner` keeps in line (LeaseRequest::wait_in_line), if any; a
  /// failed delete is left to the orphan sweep (README.md, "Waiting in line").
  void leave_line(const LeaseRequest& request, Deadline deadline) noexcept override;
  /// Blocks until the contender just ahead of `request.owner`'s place leaves or changes (an
  /// exists watch on it), until `deadline` or `stop`; nullopt without a place (zk_watch.cpp).
  std::optional<bool> wait_turn(const LeaseRequest& request, Deadline deadline,
                                const std::stop_token& stop) override;
  /// Tests only: the session of inspect and of leases of a fixed session timeout.
  [[nodiscard]] Session& base_session_for_test() { return session(); }

 private:
  Session& session() { return sessions_.base().session(); }
  std::string lock_dir(std::string_view lock) const;
  std::string candidate_dir(std::string_view group) const;
  static std::string node_data(const LeaseRequest& request, int slot, const Core& core);
  Acquired acquire_single(Core& core, const LeaseRequest& request, const std::string& dir,
                          Deadline deadline);
  Acquired acquire_slot(Core& core, const LeaseRequest& request, const std::string& dir,
                        Deadline deadline);
  std::optional<Acquired> take_turn(Core& core, const LeaseRequest& request, const std::string& dir,
                                    const Waiting& place, Deadline deadline);
  void refuse_if_group(Core& core, const LeaseRequest& request, const std::string& dir,
                       const std::vector<std::string>& children, const Waiting& mine,
                       Deadline deadline);
  [[noreturn]] void refuse(const LeaseRequest& request, int held) const;
  void refuse_other_shape(const LeaseRequest& request, const Reply& dir,
                          const std::vector<std::string>& children) const;
  LeaseStatus release_untracked(const Lease& lease, Duration keep_for, Deadline deadline);
  void holders_of(const std::string& dir, const std::vector<std::string>& children,
                  Deadline deadline, LockState& out);

  Config config_;
  Sessions sessions_;
};

}  // namespace leader::zookeeper
