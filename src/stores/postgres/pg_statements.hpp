#pragma once
/// @file pg_statements.hpp
/// The prepared statements of the PostgreSQL store. Every user value is a parameter; only the
/// validated table prefix is spliced into the text. Internal to leader::postgres.

#include <string>
#include <utility>
#include <vector>

#include "pg_schema.hpp"

namespace leader::postgres {

/// Statement names, prepared on every connection.
/// The whole acquisition (single or group), one statement: $1 lock $2 owner $3 node $4 ttl_ms
/// $5 slots. Returns (outcome, slot, token) or no row; outcome "retry": send it again.
inline constexpr const char* kAcquire = "le_acquire";
/// A single lease (slots 0) of a lock nobody holds, cheaper than kAcquire: $1 lock $2 owner
/// $3 node $4 ttl_ms. Returns ("granted", 0, token), ("busy") or no row: then send kAcquire.
inline constexpr const char* kAcquireSingle = "le_acquire_single";
inline constexpr const char* kRenew = "le_renew";  ///< $1 lock $2 slot $3 owner $4 ttl_ms
/// kRenew of many leases in one statement: $1 locks (text[]) $2 slots (int[]) $3 owners (text[])
/// $4 ttls in ms (bigint[]), one element per lease; returns the 1-based position of each lease it
/// renewed (the others are lost). A lease must appear at most once per call.
inline constexpr const char* kRenewBatch = "le_renew_batch";
inline constexpr const char* kRelease = "le_release";      ///< $1 lock $2 slot $3 owner
inline constexpr const char* kKeep = "le_keep";            ///< $1 lock $2 slot $3 owner $4 keep_ms
inline constexpr const char* kInspect = "le_inspect";      ///< $1 lock
inline constexpr const char* kListLocks = "le_locks";      ///< $1 prefix
inline constexpr const char* kPutCandidate = "le_put";     ///< see statements()
inline constexpr const char* kListCandidates = "le_list";  ///< $1 group
inline constexpr const char* kRemoveCandidate = "le_rm";   ///< $1 group $2 node

/// Fencing tokens carry the server's WAL timeline above this bit (README.md "Fencing source"):
/// token = max(last + 1, timeline << 40), so up to 2^40 acquisitions of a lock per timeline.
inline constexpr int kTimelineShift = 40;

/// (name, SQL) of every statement for the given tables.
std::vector<std::pair<std::string, std::string>> statements(const Tables& t);

}  // namespace leader::postgres
