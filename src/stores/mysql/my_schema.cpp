#include "my_schema.hpp"

#include "leader/detail/store_support.hpp"

namespace leader::detail::my {
namespace {

// The schema version found, 0 when the table is empty, -1 when it does not exist.
int schema_version(Connection& conn, const Tables& t, Deadline deadline) {
  Rows r;
  try {
    r = conn.query("SELECT COUNT(*), MAX(version) FROM " + t.schema, deadline);
  } catch (const BackendError& e) {
    if (e.code() == ErrorCode::failed_precondition) return -1;  // 1146: no such table
    throw;
  }
  const int rows = std::stoi(r.rows.at(0).at(0).value_or("0"));
  if (rows > 1)
    throw BackendError(ErrorCode::failed_precondition, kScheme,
                       t.schema + " holds " + std::to_string(rows) + " rows; expected one");
  return rows == 0 ? 0 : std::stoi(r.rows.at(0).at(1).value_or("0"));
}

std::string acquire_procedure(const Tables& t) {
  return "CREATE PROCEDURE IF NOT EXISTS " + t.acquire +
         " (IN p_lock VARCHAR(255), IN p_owner CHAR(32), IN p_node VARCHAR(255),"
         " IN p_ttl_ms BIGINT, IN p_slots INT) MODIFIES SQL DATA BEGIN"
         " DECLARE v_slot INT DEFAULT NULL; DECLARE v_token BIGINT DEFAULT NULL;"
         " DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;"
         " SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION;"
         // Lock the fence row (created at 0 if absent): acquirers of a lock queue here, so the
         // slot choice below reads a snapshot taken after the previous one committed.
         " INSERT INTO " +
         t.fences +
         " (lock_name, last_token) VALUES (p_lock, 0)"
         " ON DUPLICATE KEY UPDATE last_token = last_token;"
         " SELECT last_token INTO v_token FROM " +
         t.fences +
         " WHERE lock_name = p_lock FOR UPDATE;"
         " WITH RECURSIVE s (n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s"
         " WHERE n + 1 < GREATEST(p_slots, 1)) SELECT MIN(n) INTO v_slot FROM s"
         " WHERE NOT EXISTS (SELECT 1 FROM " +
         t.leases +
         " l WHERE l.lock_name = p_lock AND l.slot = s.n AND l.expires_at > UTC_TIMESTAMP(6));"
         " IF v_slot IS NULL THEN COMMIT; SELECT NULL AS slot, NULL AS fencing_token;"
         " ELSE SET v_token = v_token + 1; UPDATE " +
         t.fences +
         " SET last_token = v_token WHERE lock_name = p_lock;"
         " INSERT INTO " +
         t.leases +
         " (lock_name, slot, owner, node_id, fencing_token, acquired_at, expires_at)"
         " VALUES (p_lock, v_slot, p_owner, p_node, v_token, UTC_TIMESTAMP(6),"
         " UTC_TIMESTAMP(6) + INTERVAL p_ttl_ms * 1000 MICROSECOND)"
         " ON DUPLICATE KEY UPDATE owner = VALUES(owner), node_id = VALUES(node_id),"
         " fencing_token = VALUES(fencing_token), acquired_at = VALUES(acquired_at),"
         " expires_at = VALUES(expires_at);"
         " COMMIT; SELECT v_slot AS slot, v_token AS fencing_token; END IF; END";
}

}  // namespace

Tables tables_for(const std::string& prefix) {
  detail::validate_table_prefix(prefix, "the mysql store URI");
  return {prefix,
          prefix + "schema",
          prefix + "leases",
          prefix + "fences",
          prefix + "candidates",
          prefix + "acquire"};
}

std::vector<std::string> schema_ddl(const Tables& t) {
  const std::string opts = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
  return {
      "CREATE TABLE IF NOT EXISTS " + t.schema + " (version INTEGER NOT NULL)" + opts,
      "CREATE TABLE IF NOT EXISTS " + t.leases +
          " (lock_name VARCHAR(255) NOT NULL, slot INTEGER NOT NULL, owner CHAR(32) NOT NULL,"
          " node_id VARCHAR(255) NOT NULL, fencing_token BIGINT NOT NULL,"
          " acquired_at DATETIME(6) NOT NULL, expires_at DATETIME(6) NOT NULL,"
          " PRIMARY KEY (lock_name, slot))" +
          opts,
      "CREATE TABLE IF NOT EXISTS " + t.fences +
          " (lock_name VARCHAR(255) NOT NULL PRIMARY KEY, last_token BIGINT NOT NULL)" + opts,
      "CREATE TABLE IF NOT EXISTS " + t.candidates +
          " (group_name VARCHAR(255) NOT NULL, node_id VARCHAR(255) NOT NULL,"
          " registered_at DATETIME(6) NOT NULL, expires_at DATETIME(6) NOT NULL,"
          " successes BIGINT NOT NULL DEFAULT 0, failures BIGINT NOT NULL DEFAULT 0,"
          " last_completion DATETIME(6) NULL, metadata TEXT NOT NULL,"
          " PRIMARY KEY (group_name, node_id))" +
          opts,
      acquire_procedure(t),
      "INSERT INTO " + t.schema + " (version) SELECT 1 FROM DUAL WHERE NOT EXISTS (SELECT 1 FROM " +
          t.schema + ")",
  };
}

void ensure_schema(Connection& conn, const Tables& t, bool create, Deadline deadline) {
  int version = schema_version(conn, t, deadline);
  if (version <= 0 && create) {
    const std::string lock = "'leader-schema-" + t.prefix + "'";
    auto got = conn.query("SELECT GET_LOCK(" + lock + ", 10)", deadline);
    if (got.rows.at(0).at(0).value_or("0") != "1")
      throw BackendError(ErrorCode::unavailable, kScheme, "could not take the schema lock");
    try {
      for (const auto& ddl : schema_ddl(t)) conn.query(ddl, deadline);
    } catch (...) {
      if (!conn.broken()) conn.query("SELECT RELEASE_LOCK(" + lock + ")", deadline);
      throw;
    }
    conn.query("SELECT RELEASE_LOCK(" + lock + ")", deadline);
    version = schema_version(conn, t, deadline);
  }
  if (version <= 0)
    throw BackendError(ErrorCode::failed_precondition, kScheme,
                       "the tables " + t.prefix +
                           "* do not exist (create_schema=false); apply the DDL of "
                           "docs/sql-schema.md or drop that option");
  if (version != kSchemaVersion)
    throw BackendError(ErrorCode::failed_precondition, kScheme,
                       "schema version " + std::to_string(version) + " of " + t.schema +
                           " is not the one this library uses (" + std::to_string(kSchemaVersion) +
                           ")");
}

}  // namespace leader::detail::my
