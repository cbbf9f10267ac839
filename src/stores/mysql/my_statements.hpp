#pragma once
/// @file my_statements.hpp
/// The prepared statements of the MariaDB store. Every user value is a bound parameter; only
/// the validated table prefix is spliced into the text. Internal to leader::mysql.

#include <string>
#include <utility>
#include <vector>

#include "my_schema.hpp"

namespace leader::mysql {

inline constexpr const char* kAcquire = "acquire";  ///< lock, owner, node, ttl_ms, slots
inline constexpr const char* kRenew = "renew";      ///< ttl_us, lock, slot, owner
/// kRenew of many leases in one statement (an anonymous compound statement, MariaDB 10.6+): one
/// JSON array of [lock, slot, owner, ttl_us] per lease; answers one row, one column: a string
/// of '1' (renewed) or '0' (lost), one character per lease, in order. Prepared where the server
/// accepts it (not on MySQL or MariaDB < 10.6: renew_batch then renews one lease at a time).
inline constexpr const char* kRenewBatch = "renew_batch";
inline constexpr const char* kRelease = "release";       ///< lock, slot, owner
inline constexpr const char* kKeep = "keep";             ///< keep_us, lock, slot, owner
inline constexpr const char* kInspect = "inspect";       ///< lock
inline constexpr const char* kListLocks = "list_locks";  ///< prefix
inline constexpr const char* kPutCandidate = "put";      ///< see statements()
inline constexpr const char* kListCandidates = "list";   ///< group
inline constexpr const char* kRemoveCandidate = "rm";    ///< group, node

/// (name, SQL) of every statement for the given tables.
std::vector<std::pair<std::string, std::string>> statements(const Tables& t);

}  // namespace leader::mysql
