#pragma once
/// @file schema.hpp
/// The shared SQL schema (docs/sql-schema.md) in its SQLite form, and the SQL text of every
/// statement the store runs. Table names come from the validated table prefix; user values are
/// always bound parameters.

#include <string>

#include "connection.hpp"

namespace leader::sqlite {

/// The schema version this store reads and writes.
inline constexpr int kSchemaVersion = 1;

/// Milliseconds since the Unix epoch by the database host's clock, as an SQL expression. SQLite
/// evaluates 'now' once per statement, so every use inside one statement agrees.
inline constexpr const char* kNowMs =
    "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";

/// The CREATE TABLE IF NOT EXISTS statements of the schema for `prefix`.
[[nodiscard]] std::string schema_ddl(const std::string& prefix);

/// Switches the database to WAL mode and creates or migrates (when `create`) or checks the schema;
/// throws BackendError failed_precondition naming a missing table or column or an unknown schema
/// version.
void prepare_schema(Connection& conn, const std::string& prefix, bool create);

/// The SQL text of every statement, for one table prefix.
struct SqlText {
  std::string held_size;         ///< ?1 lock ?2 slots -> the live size when it differs
  std::string renew_own;         ///< ?1 lock ?2 owner ?3 ttl -> slot, token of a live lease
  std::string bump_fence;        ///< ?1 lock ?2 slots -> RETURNING last_token
  std::string take_slot;         ///< ?1 lock ?2 slots ?3 owner ?4 node ?5 token ?6 ttl -> slot
  std::string renew;             ///< ?1 lock ?2 slot ?3 owner ?4 ttl
  std::string release;           ///< ?1 lock ?2 slot ?3 owner
  std::string release_keep;      ///< ?1 lock ?2 slot ?3 owner ?4 keep_for
  std::string inspect;           ///< ?1 lock -> node, owner, token, slot, expires_in
  std::string list_locks;        ///< ?1 prefix -> node, owner, token, slot, expires_in, lock
  std::string put_candidate;     ///< ?1 group ?2 node ?3 ttl ?4 ok ?5 failed ?6 last ?7 meta
  std::string list_candidates;   ///< ?1 group -> node, registered, ok, failed, last, meta
  std::string remove_candidate;  ///< ?1 group ?2 node

  /// Builds the statements for tables named `<prefix><table>`.
  static SqlText for_prefix(const std::string& prefix);
};

}  // namespace leader::sqlite
