#pragma once
// leader::mongodb: leases in one MongoDB document per lock, every transition one conditional
// findAndModify or update judged by the server's clock ($$NOW, $currentDate). See README.md.

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "config.hpp"
#include "connection.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/lock_listing.hpp"
#include "leader/store.hpp"
#include "lock_doc.hpp"

namespace leader::mongodb {

/// The MongoDB store. Thread-safe. Opening does no I/O: the first call connects.
class MongoStore : public LeaseStore, public LockLister {
 public:
  /// A store over `config`'s deployment and database.
  explicit MongoStore(Config config);

  [[nodiscard]] std::string_view scheme() const override { return "mongodb"; }

  [[nodiscard]] Capabilities capabilities() noexcept override { return {.listing = this}; }
  LEADER_LEASE_STORE_OPERATIONS;  // the LeaseStore operations, store_support.hpp
  /// Held locks under `prefix`: a find of the lock documents whose _id starts with `prefix`
  /// (an anchored $regex, served by the _id index), ids only, then inspect() of each.
  [[nodiscard]] std::vector<LockState> list_locks(std::string_view prefix,
                                                  Deadline deadline) override;

  /// The connection (tests and the benchmark send raw commands through it).
  [[nodiscard]] Connection& connection() { return connection_; }

 private:
  LockDoc read_lock(std::string_view lock, Deadline deadline);
  std::optional<std::uint64_t> grant(const LeaseRequest& request, const LockDoc& doc, int slot,
                                     bool size_change, Deadline deadline);
  LeaseStatus refresh(const Lease& lease, Duration ttl, const std::string* node, Deadline deadline);
  /// One conditional write of a candidate entry (`mode`: a CandidateWrite, candidates.cpp).
  bool write_candidate(std::string_view group, const Candidate& c, Duration ttl, int mode,
                       Deadline deadline);
  void ensure_candidate_indexes(Deadline deadline);

  Connection connection_;
  std::string locks_;
  std::string candidates_;
  std::mutex index_mu_;
  bool indexes_ready_ = false;
};

}  // namespace leader::mongodb
