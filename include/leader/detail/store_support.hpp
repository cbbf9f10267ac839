#pragma once
/// @file store_support.hpp
/// Validation shared by store implementations (not part of the user-facing API).

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "leader/store.hpp"

namespace leader::detail {

/// Longest table/key prefix a store accepts.
inline constexpr std::size_t kMaxTablePrefixLength = 31;

/// Throws InvalidArgument unless `prefix` matches ^[A-Za-z_][A-Za-z0-9_]{0,30}$; `where` names
/// the URI or option it came from (already redacted).
void validate_table_prefix(std::string_view prefix, std::string_view where);
/// Throws InvalidArgument unless `owner` is 32 lower-case hex characters.
void validate_owner_token(std::string_view owner);
/// Throws InvalidArgument unless `node_id` is 1..255 characters.
void validate_node_id(std::string_view node_id, std::string_view store);
/// Validates the lock name, owner token, node id, ttl and slot count of a request.
void validate_request(const LeaseRequest& request, std::string_view store);
/// Validates the lock name, owner token and slot of a held lease.
void validate_lease(const Lease& lease);

/// A stored wall-clock time (milliseconds since the epoch) as a WallTime, clamped to the range
/// WallTime holds, so that a malformed stored value cannot overflow the conversion.
[[nodiscard]] WallTime wall_time_from_epoch_ms(std::int64_t ms);
/// As wall_time_from_epoch_ms, from microseconds since the epoch.
[[nodiscard]] WallTime wall_time_from_epoch_us(std::int64_t us);

}  // namespace leader::detail
