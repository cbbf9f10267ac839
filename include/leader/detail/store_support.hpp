#pragma once
/// @file store_support.hpp
/// What store implementations share (not part of the user-facing API): the limits the
/// CheckedStore enforces for every store, the CheckedStore itself, and small conversions.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "leader/store.hpp"

namespace leader::detail {

/// Longest table/key prefix a store accepts.
inline constexpr std::size_t kMaxTablePrefixLength = 31;
/// Most slots a group lease may have, for every store (a DynamoDB item holds them all).
inline constexpr int kMaxSlots = 1000;
/// Longest node id a store accepts.
inline constexpr std::size_t kMaxNodeIdLength = 255;
/// Most metadata entries of one candidate.
inline constexpr std::size_t kMaxMetadataEntries = 64;
/// Longest metadata key of a candidate.
inline constexpr std::size_t kMaxMetadataKeyLength = 255;
/// Longest metadata value of a candidate.
inline constexpr std::size_t kMaxMetadataValueLength = 4096;

/// Throws InvalidArgument unless `prefix` matches ^[A-Za-z_][A-Za-z0-9_]{0,30}$; `where` names
/// the URI or option it came from (already redacted).
void validate_table_prefix(std::string_view prefix, std::string_view where);
/// Throws BackendError{failed_precondition} of store `scheme` unless a SQL store's schema
/// `version` (read from table `schema_table`) is `expected`: <= 0 means the tables `<prefix>*`
/// do not exist (create_schema=false), another version is not the one this library uses.
void check_sql_schema_version(std::string_view scheme, int version, int expected,
                              std::string_view prefix, std::string_view schema_table);
/// `store` wrapped in the CheckedStore that validates every call once, refuses a passed deadline
/// before any I/O and maps stray exceptions to BackendError{internal} (leader::open() and
/// make_memory_store() apply it); a store that is already checked, or null, is returned as it is.
[[nodiscard]] std::shared_ptr<LeaseStore> checked(std::shared_ptr<LeaseStore> store);
/// The store under every ForwardingStore around `store` (leader::open()'s CheckedStore,
/// Metrics::instrument), or `store` itself: for a store's own diagnostics and tests.
[[nodiscard]] LeaseStore& unchecked(LeaseStore& store);

/// Declares the LeaseStore operations (all but scheme()) as overrides in a class that implements
/// them: the one list every store and the CheckedStore share. Use as
/// `LEADER_LEASE_STORE_OPERATIONS;` in the public section of the class.
// NOLINTBEGIN(bugprone-macro-parentheses): a list of declarations, nothing to parenthesise.
#define LEADER_LEASE_STORE_OPERATIONS                                                           \
  ::leader::Acquired try_acquire(const ::leader::LeaseRequest& request,                         \
                                 ::leader::Deadline deadline) override;                         \
  ::leader::Renewal renew(const ::leader::Lease& lease, ::leader::Duration ttl,                 \
                          ::leader::Deadline deadline) override;                                \
  ::leader::LeaseStatus release(const ::leader::Lease& lease, ::leader::Duration keep_for,      \
                                ::leader::Deadline deadline) override;                          \
  [[nodiscard]] ::leader::LockState inspect(std::string_view lock, ::leader::Deadline deadline) \
      override;                                                                                 \
  void put_candidate(std::string_view group, const ::leader::Candidate& candidate,              \
                     ::leader::Duration ttl, ::leader::Deadline deadline) override;             \
  [[nodiscard]] std::vector<::leader::Candidate> list_candidates(                               \
      std::string_view group, ::leader::Deadline deadline) override;                            \
  void remove_candidate(std::string_view group, std::string_view node_id,                       \
                        ::leader::Deadline deadline) override
// NOLINTEND(bugprone-macro-parentheses)

/// A stored wall-clock time (milliseconds since the epoch) as a WallTime, clamped to the range
/// WallTime holds, so that a malformed stored value cannot overflow the conversion.
[[nodiscard]] WallTime wall_time_from_epoch_ms(std::int64_t ms);
/// As wall_time_from_epoch_ms, from microseconds since the epoch.
[[nodiscard]] WallTime wall_time_from_epoch_us(std::int64_t us);

}  // namespace leader::detail
