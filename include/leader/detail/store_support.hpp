#pragma once
/// @file store_support.hpp
/// Validation shared by store implementations (not part of the user-facing API).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "leader/store.hpp"

namespace leader::detail {

/// Longest table/key prefix a store accepts.
inline constexpr std::size_t kMaxTablePrefixLength = 31;
/// Most slots a group lease may have, for every store (a DynamoDB item holds them all).
inline constexpr int kMaxSlots = 1000;
/// Longest node id a store accepts.
inline constexpr std::size_t kMaxNodeIdLength = 255;

/// Throws InvalidArgument unless `prefix` matches ^[A-Za-z_][A-Za-z0-9_]{0,30}$; `where` names
/// the URI or option it came from (already redacted).
void validate_table_prefix(std::string_view prefix, std::string_view where);
/// Throws InvalidArgument unless `owner` is 32 lower-case hex characters.
void validate_owner_token(std::string_view owner);
/// Throws InvalidArgument unless `node_id` is 1..255 characters.
void validate_node_id(std::string_view node_id, std::string_view store);
/// Throws InvalidArgument unless 0 < `ttl` <= kMaxDuration (365 days); `what` names it.
void validate_ttl(Duration ttl, std::string_view what);
/// Validates the lock name, owner token, node id, ttl and slot count of a request.
void validate_request(const LeaseRequest& request, std::string_view store);
/// Validates the lock name, owner token, slot and slot count of a held lease.
void validate_lease(const Lease& lease);
/// Validates a candidate group (lock-name rules) and, unless null, a node id (1..255 chars).
void validate_candidate(std::string_view group, const std::string_view* node_id,
                        std::string_view store);

/// `store` wrapped in the CheckedStore that validates every call once (leader::open() applies
/// it); a store that is already checked, or null, is returned as it is.
[[nodiscard]] std::shared_ptr<LeaseStore> checked(std::shared_ptr<LeaseStore> store);
/// The store a CheckedStore wraps, or `store` itself (for store-specific casts).
[[nodiscard]] LeaseStore& unchecked(LeaseStore& store);

/// A stored wall-clock time (milliseconds since the epoch) as a WallTime, clamped to the range
/// WallTime holds, so that a malformed stored value cannot overflow the conversion.
[[nodiscard]] WallTime wall_time_from_epoch_ms(std::int64_t ms);
/// As wall_time_from_epoch_ms, from microseconds since the epoch.
[[nodiscard]] WallTime wall_time_from_epoch_us(std::int64_t us);

}  // namespace leader::detail
