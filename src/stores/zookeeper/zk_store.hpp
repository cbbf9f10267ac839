#pragma once
// The ZooKeeper store: a lease is an ephemeral znode plus the session that owns it. The store's
// operations hand each call to the lease recipe (zk_core.hpp), which runs it on a session of
// src/clients/zookeeper. See README.md for the data model, how ttl/renew/release map onto
// sessions, and the failure modes.

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
  LeaseStatus release_untracked(const Lease& lease, Duration keep_for, Deadline deadline);
  void holders_of(const std::string& dir, const std::vector<std::string>& children,
                  Deadline deadline, LockState& out);

  Config config_;
  Sessions sessions_;
};

}  // namespace leader::zookeeper
