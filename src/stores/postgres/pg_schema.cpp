#include "pg_schema.hpp"

#include <cstdlib>

#include "leader/detail/store_support.hpp"

namespace leader::postgres {
namespace {

// The schema version found, 0 when the table is empty, -1 when it does not exist.
int schema_version(Connection& conn, const Tables& t, Deadline deadline) {
  try {
    auto results =
        conn.run({{"SELECT count(*), max(version) FROM " + t.schema, {}, false}}, deadline);
    PGresult* r = results.front().get();
    const int rows = std::atoi(PQgetvalue(r, 0, 0));
    if (rows > 1)
      throw BackendError(ErrorCode::failed_precondition, kScheme,
                         t.schema + " holds " + std::to_string(rows) + " rows; expected one");
    return rows == 0 ? 0 : std::atoi(PQgetvalue(r, 0, 1));
  } catch (const BackendError& e) {
    if (e.code() == ErrorCode::failed_precondition &&
        std::string(e.what()).find("rows;") == std::string::npos)
      return -1;  // 42P01: no such table
    throw;
  }
}

// True when `<prefix>fences` has the `slots` column (added after the first layout).
bool has_slots_column(Connection& conn, const Tables& t, Deadline deadline) {
  auto results = conn.run({{"SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass($1)"
                            " AND attname = 'slots' AND NOT attisdropped",
                            {t.fences},
                            false}},
                          deadline);
  return std::atoi(PQgetvalue(results.front().get(), 0, 0)) == 1;
}

}  // namespace

Tables tables_for(const std::string& prefix) {
  detail::validate_table_prefix(prefix, "the postgres store URI");
  return {prefix,
          prefix + "schema",
          prefix + "leases",
          prefix + "fences",
          prefix + "candidates",
          prefix + "changed"};
}

std::string schema_ddl(const Tables& t) {
  return "CREATE TABLE IF NOT EXISTS " + t.schema +
         " (version INTEGER NOT NULL);\n"
         "CREATE TABLE IF NOT EXISTS " +
         t.leases +
         " (lock_name VARCHAR(255) NOT NULL, slot INTEGER NOT NULL, owner CHAR(32) NOT NULL,"
         " node_id VARCHAR(255) NOT NULL, fencing_token BIGINT NOT NULL,"
         " acquired_at TIMESTAMPTZ(6) NOT NULL, expires_at TIMESTAMPTZ(6) NOT NULL,"
         " PRIMARY KEY (lock_name, slot));\n"
         "CREATE TABLE IF NOT EXISTS " +
         t.fences +
         " (lock_name VARCHAR(255) PRIMARY KEY, last_token BIGINT NOT NULL, slots INTEGER NULL);\n"
         "ALTER TABLE " +
         t.fences +
         " ADD COLUMN IF NOT EXISTS slots INTEGER NULL;\n"
         "CREATE TABLE IF NOT EXISTS " +
         t.candidates +
         " (group_name VARCHAR(255) NOT NULL, node_id VARCHAR(255) NOT NULL,"
         " registered_at TIMESTAMPTZ(6) NOT NULL, expires_at TIMESTAMPTZ(6) NOT NULL,"
         " successes BIGINT NOT NULL DEFAULT 0, failures BIGINT NOT NULL DEFAULT 0,"
         " last_completion TIMESTAMPTZ(6) NULL, metadata TEXT NOT NULL DEFAULT '{}',"
         " PRIMARY KEY (group_name, node_id));\n"
         "INSERT INTO " +
         t.schema + " (version) SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM " + t.schema + ");\n";
}

void ensure_schema(Connection& conn, const Tables& t, bool create, Deadline deadline) {
  int version = schema_version(conn, t, deadline);
  const bool current = version == kSchemaVersion && has_slots_column(conn, t, deadline);
  if (!current && create && version <= kSchemaVersion) {
    // The advisory lock serialises concurrent first starts: CREATE TABLE IF NOT EXISTS alone
    // can fail with a unique violation in pg_type when two sessions race.
    conn.run_script("BEGIN;\nSELECT pg_advisory_xact_lock(1818322290, hashtext('" + t.prefix +
                        "'));\n" + schema_ddl(t) + "COMMIT;",
                    deadline);
    version = schema_version(conn, t, deadline);
  }
  if (version == kSchemaVersion && !has_slots_column(conn, t, deadline))
    throw BackendError(ErrorCode::failed_precondition, kScheme,
                       "the table " + t.fences +
                           " lacks the column slots (create_schema=false); apply the migration of "
                           "docs/sql-schema.md");
  detail::check_sql_schema_version(kScheme, version, kSchemaVersion, t.prefix, t.schema);
}

}  // namespace leader::postgres
