#pragma once
// The lock document of the MongoDB store (README.md "Data model"): one document per lock in
// <prefix>locks holding the fencing counter, the lock's group size and one record per held slot,
// and the pieces of the conditions and updates written against it.

#include <mongoc/mongoc.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace leader::mongodb {

/// One held slot as stored under `holders.<slot>`.
struct SlotRecord {
  int slot = 0;
  std::string owner;
  std::string node;
  std::uint64_t token = 0;
  std::int64_t renewed_ms = 0;  ///< server time of the last grant or renewal (ms since epoch)
  std::int64_t ttl_ms = 0;      ///< the lease granted then
  /// Expired by the server's clock `now_ms` (renewed + ttl <= now).
  [[nodiscard]] bool expired_at(std::int64_t now_ms) const { return renewed_ms + ttl_ms <= now_ms; }
};

/// A lock document as read, with the server time of the read.
struct LockDoc {
  bool exists = false;
  std::optional<std::int64_t> fence;  ///< the last fencing token handed out
  std::optional<int> slots;           ///< the lock's size: 0 single leader, N a group of N
  std::vector<SlotRecord> holders;    ///< every stored record, live or expired, by slot
  std::int64_t now_ms = 0;            ///< $$NOW of the read
};

/// Parses the reply of the read aggregation (cursor.firstBatch with at most one document).
LockDoc parse_lock_reply(const bson_t* reply);

/// `holders.<slot>` or `holders.<slot>.<field>`.
std::string holder_path(int slot, const char* field = nullptr);

/// Appends `{$or: [{holders.<slot>: {$exists: false}}, {$expr: <expired by $$NOW>}]}` (a free
/// or expired slot) to the array being built in `clauses` under key `key`.
void append_free_or_expired(bson_t* clauses, const char* key, int slot);
/// Appends `{$expr: {<op>: ["$<prefix>.renewed", {$subtract: ["$$NOW", "$<prefix>.ttl_ms"]}]}}`
/// under `key`: with "$gt" the record is live by the server's clock, with "$lte" expired. An
/// empty `prefix` names top-level fields.
void append_expiry_expr(bson_t* parent, const char* key, const std::string& prefix, const char* op);
/// Appends `{$expr: <holders.<slot> live by $$NOW>}` under `key`.
void append_live(bson_t* clauses, const char* key, int slot);

}  // namespace leader::mongodb
