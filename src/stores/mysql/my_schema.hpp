#pragma once
/// @file my_schema.hpp
/// The shared SQL schema (docs/sql-schema.md) in MariaDB's dialect (tables plus the acquire
/// procedure), created idempotently under a named lock. Internal to leader::mysql.

#include <string>
#include <vector>

#include "my_connection.hpp"

namespace leader::mysql {

/// The schema version this code reads and writes.
inline constexpr int kSchemaVersion = 1;

/// Object names derived from a validated prefix.
struct Tables {
  std::string prefix;
  std::string schema;
  std::string leases;
  std::string fences;
  std::string candidates;
  std::string acquire;  ///< the stored procedure that grants a lease (`<prefix>acquire_v2`)
};

/// Validates `prefix` against ^[A-Za-z_][A-Za-z0-9_]{0,30}$ (throws InvalidArgument naming it).
Tables tables_for(const std::string& prefix);

/// The DDL statements, in order (each idempotent).
std::vector<std::string> schema_ddl(const Tables& tables);

/// Checks the schema version and the objects added since (fences.slots, the acquire procedure);
/// when `create` is set, first creates or adds what is missing while holding
/// GET_LOCK('leader-schema-<prefix>'), so that concurrent first starts do it once. Throws
/// BackendError (failed_precondition when missing with create off, or another version).
void ensure_schema(Connection& conn, const Tables& tables, bool create, Deadline deadline);

}  // namespace leader::mysql
