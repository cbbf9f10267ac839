#include "my_schema.hpp"

#include "leader/detail/store_support.hpp"

namespace leader::mysql {
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

// The acquire procedure (one READ COMMITTED transaction): lock the fence row, then every lease
// row of the lock, so that a renew or release waiting on one of them commits wholly before or
// wholly after this acquisition; decide with one server time taken after the locks.
std::string acquire_procedure(const Tables& t) {
  const std::string ttl = "v_now + INTERVAL p_ttl_ms * 1000 MICROSECOND";
  return "CREATE PROCEDURE IF NOT EXISTS " + t.acquire +
         " (IN p_lock VARCHAR(255), IN p_owner CHAR(32), IN p_node VARCHAR(255),"
         " IN p_ttl_ms BIGINT, IN p_slots INT) MODIFIES SQL DATA BEGIN"
         " DECLARE v_now DATETIME(6); DECLARE v_slot INT DEFAULT NULL;"
         " DECLARE v_token BIGINT DEFAULT NULL; DECLARE v_held INT DEFAULT NULL;"
         " DECLARE v_rows INT DEFAULT 0;"
         " DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;"
         " SET TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION;"
         " INSERT INTO " +
         t.fences +
         " (lock_name, last_token) VALUES (p_lock, 0)"
         " ON DUPLICATE KEY UPDATE last_token = last_token;"
         " SELECT last_token, slots INTO v_token, v_held FROM " +
         t.fences +
         " WHERE lock_name = p_lock FOR UPDATE;"
         // No expiry condition: READ COMMITTED keeps the locks of matching rows only.
         " SELECT COUNT(*) INTO v_rows FROM " +
         t.leases +
         " WHERE lock_name = p_lock FOR UPDATE;"
         " SET v_now = UTC_TIMESTAMP(6);"
         " IF v_held IS NOT NULL AND v_held <> p_slots AND EXISTS (SELECT 1 FROM " +
         t.leases +
         " WHERE lock_name = p_lock AND expires_at > v_now) THEN"
         " COMMIT; SELECT 'mismatch' AS outcome, v_held AS slot, NULL AS fencing_token;"
         " ELSE SET v_slot = (SELECT MIN(slot) FROM " +
         t.leases +
         " WHERE lock_name = p_lock AND owner = p_owner AND expires_at > v_now);"
         " IF v_slot IS NOT NULL THEN UPDATE " +
         t.leases + " SET expires_at = " + ttl +
         " WHERE lock_name = p_lock AND slot = v_slot;"
         " UPDATE " +
         t.fences +
         " SET slots = p_slots WHERE lock_name = p_lock AND slots IS NULL;"
         " COMMIT; SELECT 'held' AS outcome, v_slot AS slot, fencing_token FROM " +
         t.leases +
         " WHERE lock_name = p_lock AND slot = v_slot;"
         " ELSE WITH RECURSIVE s (n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s"
         " WHERE n + 1 < GREATEST(p_slots, 1)) SELECT MIN(n) INTO v_slot FROM s"
         " WHERE NOT EXISTS (SELECT 1 FROM " +
         t.leases +
         " l WHERE l.lock_name = p_lock AND l.slot = s.n AND l.expires_at > v_now);"
         " IF v_slot IS NULL THEN COMMIT;"
         " SELECT 'busy' AS outcome, NULL AS slot, NULL AS fencing_token;"
         " ELSE SET v_token = v_token + 1; UPDATE " +
         t.fences +
         " SET last_token = v_token, slots = p_slots WHERE lock_name = p_lock;"
         " INSERT INTO " +
         t.leases +
         " (lock_name, slot, owner, node_id, fencing_token, acquired_at, expires_at)"
         " VALUES (p_lock, v_slot, p_owner, p_node, v_token, v_now, " +
         ttl +
         ")"
         " ON DUPLICATE KEY UPDATE owner = VALUES(owner), node_id = VALUES(node_id),"
         " fencing_token = VALUES(fencing_token), acquired_at = VALUES(acquired_at),"
         " expires_at = VALUES(expires_at);"
         " COMMIT; SELECT 'granted' AS outcome, v_slot AS slot, v_token AS fencing_token;"
         " END IF; END IF; END IF; END";
}

// Number of the objects added after the first layout that exist: the fences.slots column and
// the current acquire procedure (2 when the schema is up to date).
int migrated_objects(Connection& conn, const Tables& t, Deadline deadline) {
  auto r = conn.query(
      "SELECT (SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE()"
      " AND table_name = '" +
          t.fences +
          "' AND column_name = 'slots') + (SELECT COUNT(*) FROM"
          " information_schema.routines WHERE routine_schema = DATABASE() AND routine_type ="
          " 'PROCEDURE' AND routine_name = '" +
          t.acquire + "')",
      deadline);
  return std::stoi(r.rows.at(0).at(0).value_or("0"));
}

// Adds what a schema created by an earlier release lacks (each step idempotent; the caller holds
// the schema lock). Older binaries keep working on the result: they never name the new column.
void migrate(Connection& conn, const Tables& t, Deadline deadline) {
  auto column = conn.query(
      "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND"
      " table_name = '" +
          t.fences + "' AND column_name = 'slots'",
      deadline);
  if (column.rows.at(0).at(0).value_or("0") == "0")
    conn.query("ALTER TABLE " + t.fences + " ADD COLUMN slots INTEGER NULL", deadline);
  conn.query(acquire_procedure(t), deadline);
}

}  // namespace

Tables tables_for(const std::string& prefix) {
  detail::validate_table_prefix(prefix, "the mysql store URI");
  return {prefix,
          prefix + "schema",
          prefix + "leases",
          prefix + "fences",
          prefix + "candidates",
          prefix + "acquire_v2"};
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
          " (lock_name VARCHAR(255) NOT NULL PRIMARY KEY, last_token BIGINT NOT NULL,"
          " slots INTEGER NULL)" +
          opts,
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
  const bool current = version == kSchemaVersion && migrated_objects(conn, t, deadline) == 2;
  if (!current && create && version <= kSchemaVersion) {
    const std::string lock = "'leader-schema-" + t.prefix + "'";
    auto got = conn.query("SELECT GET_LOCK(" + lock + ", 10)", deadline);
    if (got.rows.at(0).at(0).value_or("0") != "1")
      throw BackendError(ErrorCode::unavailable, kScheme, "could not take the schema lock");
    try {
      if (version <= 0)
        for (const auto& ddl : schema_ddl(t)) conn.query(ddl, deadline);
      migrate(conn, t, deadline);
    } catch (...) {
      if (!conn.broken()) conn.query("SELECT RELEASE_LOCK(" + lock + ")", deadline);
      throw;
    }
    conn.query("SELECT RELEASE_LOCK(" + lock + ")", deadline);
    version = schema_version(conn, t, deadline);
  } else if (!current && version == kSchemaVersion) {
    throw BackendError(ErrorCode::failed_precondition, kScheme,
                       "the tables " + t.prefix +
                           "* lack the column fences.slots or the procedure " + t.acquire +
                           " (create_schema=false); apply the migration of docs/sql-schema.md");
  }
  detail::check_sql_schema_version(kScheme, version, kSchemaVersion, t.prefix, t.schema);
}

}  // namespace leader::mysql
