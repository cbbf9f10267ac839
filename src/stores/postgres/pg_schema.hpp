#pragma once
/// @file pg_schema.hpp
/// The shared SQL schema (docs/sql-schema.md) in PostgreSQL's dialect, and its idempotent
/// creation under concurrent start-up. Internal to leader::postgres.

#include <string>

#include "pg_connection.hpp"

namespace leader::postgres {

/// The schema version this code reads and writes.
inline constexpr int kSchemaVersion = 1;

/// Table names derived from a validated prefix.
struct Tables {
  std::string prefix;
  std::string schema;
  std::string leases;
  std::string fences;
  std::string candidates;
  /// The NOTIFY channel of the lock changes (`<prefix>changed`; payload: the lock name), see
  /// README.md "Watching". Empty: the statements notify nothing (a benchmark's baseline only).
  std::string channel;
};

/// Validates `prefix` against ^[A-Za-z_][A-Za-z0-9_]{0,30}$ (throws InvalidArgument naming it).
Tables tables_for(const std::string& prefix);

/// The DDL that creates the tables (idempotent: CREATE TABLE IF NOT EXISTS).
std::string schema_ddl(const Tables& tables);

/// Checks the schema version; when `create` is set, creates missing tables first under an
/// advisory lock, so that concurrent first starts create it once. Throws BackendError
/// (failed_precondition when the schema is missing with create off, or newer than this code).
void ensure_schema(Connection& conn, const Tables& tables, bool create, Deadline deadline);

}  // namespace leader::postgres
