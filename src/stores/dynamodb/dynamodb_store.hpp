#pragma once
// leader::dynamodb: leases in one DynamoDB table, as lease records with a record version number
// (RVN), expired by the contender's steady clock or by server-time stamps (see README.md).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "client.hpp"
#include "config.hpp"
#include "item.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/lock_listing.hpp"
#include "leader/store.hpp"

namespace leader::dynamodb {

/// The DynamoDB store. Thread-safe; its only shared state is the process-wide Observations.
class DynamoStore : public LeaseStore, public LockLister {
 public:
  /// A store over `config`'s table; checks the table (and creates it when `create_table`) within
  /// `config.open_timeout`. Throws BackendError when DynamoDB cannot be reached or the table is
  /// missing or has another key schema.
  explicit DynamoStore(Config config);

  [[nodiscard]] std::string_view scheme() const override { return "dynamodb"; }

  [[nodiscard]] Capabilities capabilities() noexcept override { return {.listing = this}; }
  LEADER_LEASE_STORE_OPERATIONS;  // the LeaseStore operations, store_support.hpp
  /// Held locks under `prefix`: a Scan (paginated, ConsistentRead) filtered on
  /// `begins_with(pk, "lock#<prefix>") AND sk = "lease"`, then inspect() of each lock found.
  /// Cost: a Scan reads (and is billed for) the whole table, whatever the filter keeps.
  [[nodiscard]] std::vector<LockState> list_locks(std::string_view prefix,
                                                  Deadline deadline) override;

  /// The API client (tests and benchmarks issue raw DynamoDB calls through it).
  [[nodiscard]] Client& client() { return client_; }

 private:
  /// A lease item as read, with the server's clock and the local time the read returned.
  struct ReadItem {
    nlohmann::json item;
    std::optional<std::int64_t> server_ms;
    TimePoint seen_at;
  };
  /// What a grant's condition checks besides its slot (free, or the record version seen).
  struct GrantGuard {
    const std::string* seen_rvn = nullptr;  ///< take over this record version
    bool size_change = false;  ///< the lock's size changes: size and fence must be as read
    std::int64_t old_size = 0;
    std::optional<std::int64_t> fence;
    int owner_free_below = 0;  ///< the owner must hold none of slots 1..owner_free_below-1
  };
  std::optional<std::uint64_t> grant(const LeaseRequest& request, int slot, const GrantGuard& guard,
                                     Deadline deadline);
  Acquired granted(const LeaseRequest& request, int slot, std::uint64_t token);
  std::optional<Acquired> own_lease(const LeaseRequest& request,
                                    const std::vector<SlotRecord>& held, Deadline deadline);
  std::optional<Acquired> change_size(const LeaseRequest& request, const ReadItem& read,
                                      const std::vector<SlotRecord>& held, std::int64_t old_size,
                                      Deadline deadline);
  bool clear_slots(std::string_view lock, const std::vector<SlotRecord>& held,
                   std::optional<std::int64_t> fence, Deadline deadline);
  Acquired contend(const LeaseRequest& request, const ReadItem& read,
                   const std::vector<SlotRecord>& held, bool& retry, Deadline deadline);
  LeaseStatus rewrite(const Lease& lease, Duration ttl, Deadline deadline);
  ReadItem read_lease_item(std::string_view lock, Deadline deadline);
  void stamp(std::string_view lock, const SlotRecord& rec, std::int64_t server_ms,
             Deadline deadline);
  [[nodiscard]] std::string observation_key(std::string_view lock, int slot) const;
  void delete_expired(const std::string& pk, const std::string& node, std::int64_t expires_ms,
                      Deadline deadline);

  Client client_;
};

/// Makes sure `client`'s table exists with this store's key schema (creating it when the config
/// allows) and is ACTIVE; throws BackendError otherwise.
void ensure_table(Client& client, Deadline deadline);

}  // namespace leader::dynamodb
