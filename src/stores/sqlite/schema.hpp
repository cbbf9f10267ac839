#pragma once
/// @file schema.hpp
/// The shared SQL schema (docs/sql-schema.md) in its SQLite form, and the SQL text of every
/// statement the store runs. Table names come from the validated table prefix; user values are
/// always bound parameters.

#include <string>

#include "connection.hpp"

namespace leader::sqlite {

/// The schema version this store reads and writes. 2: expiry on the host's boot clock (table
/// `<prefix>boots`), no longer on its wall clock.
inline constexpr int kSchemaVersion = 2;

/// The expiry clock as an SQL expression, in milliseconds: the `base_ms` of this host boot (table
/// `<prefix>boots`) plus CLOCK_BOOTTIME, read by the function install_clock() defines on the
/// connection. Every process on the host reads the same value: it cannot be stepped (NTP, `date`,
/// a VM's clock correction move the wall clock only) and it counts suspended time, as a server's
/// expiry would. A SQLite database in WAL mode is shared by the processes of one host only, so one
/// host's clock is the server's clock.
inline constexpr const char* kClockMs = "leader_clock_ms()";

/// Defines `leader_clock_ms()` on `conn`: reads this boot's id (/proc/sys/kernel/random/boot_id)
/// and its `base_ms` from `<prefix>boots`, registering the boot when it is new: the clock then
/// continues from the wall clock, but past every expiry written during an earlier registered boot
/// (their holders died with it); the first boot of a database continues from the wall clock alone,
/// so the expiries of a schema-1 database keep their meaning. Throws BackendError
/// failed_precondition when the boot id cannot be read.
void install_clock(Connection& conn, const std::string& prefix);

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
