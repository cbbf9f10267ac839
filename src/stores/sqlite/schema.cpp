#include "schema.hpp"

#include <sqlite3.h>
#include <time.h>

#include <array>
#include <chrono>
#include <fstream>
#include <optional>

namespace leader::sqlite {
namespace {

constexpr std::array<const char*, 5> kTables = {"schema", "leases", "fences", "candidates",
                                                "boots"};

// True when table `<prefix><table>` exists.
bool has_table(Connection& conn, const std::string& prefix, const std::string& table) {
  Statement find(conn, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1");
  ResetOnExit reset(find);
  find.bind(1, prefix + table);
  return find.step("looking up table " + prefix + table);
}

// Throws failed_precondition unless table `<prefix><table>` exists.
void expect_table(Connection& conn, const std::string& prefix, const std::string& table) {
  if (has_table(conn, prefix, table)) return;
  throw sqlite_error(ErrorCode::failed_precondition,
                     "database '" + conn.path() + "': table '" + prefix + table +
                         "' does not exist and create_schema=false; create the schema from "
                         "docs/sql-schema.md or open with create_schema=true");
}

// Throws failed_precondition unless the schema table holds exactly version kSchemaVersion.
void expect_version(Connection& conn, const std::string& prefix) {
  Statement read(conn, "SELECT version FROM " + prefix + "schema");
  ResetOnExit reset(read);
  if (read.step("reading the schema version")) {
    auto version = read.int_at(0);
    if (version == kSchemaVersion && !read.step("reading the schema version")) return;
    throw sqlite_error(ErrorCode::failed_precondition,
                       "database '" + conn.path() + "': table '" + prefix +
                           "schema' holds version " + std::to_string(version) +
                           " (or several rows); this build needs exactly one row with version " +
                           std::to_string(kSchemaVersion) + " (see docs/sql-schema.md)");
  }
  throw sqlite_error(ErrorCode::failed_precondition,
                     "database '" + conn.path() + "': table '" + prefix +
                         "schema' is empty; insert version " + std::to_string(kSchemaVersion) +
                         " (see docs/sql-schema.md)");
}

// True when `<prefix>fences` has the `slots` column (added after the first layout).
bool has_slots_column(Connection& conn, const std::string& prefix) {
  Statement find(conn, "SELECT 1 FROM pragma_table_info(?1) WHERE name = 'slots'");
  ResetOnExit reset(find);
  find.bind(1, prefix + "fences");
  return find.step("looking up column " + prefix + "fences.slots");
}

}  // namespace

std::string schema_ddl(const std::string& p) {
  return "CREATE TABLE IF NOT EXISTS " + p +
         "schema (\n"
         "  version INTEGER NOT NULL\n"
         ");\n"
         "CREATE TABLE IF NOT EXISTS " +
         p +
         "leases (\n"
         "  lock_name     VARCHAR(255) NOT NULL,\n"
         "  slot          INTEGER      NOT NULL,\n"
         "  owner         CHAR(32)     NOT NULL,\n"
         "  node_id       VARCHAR(255) NOT NULL,\n"
         "  fencing_token BIGINT       NOT NULL,\n"
         "  acquired_at   INTEGER      NOT NULL, -- ms since the Unix epoch, host wall clock\n"
         "  expires_at    INTEGER      NOT NULL, -- ms, expiry clock (boots.base_ms + boot time)\n"
         "  PRIMARY KEY (lock_name, slot)\n"
         ");\n"
         "CREATE TABLE IF NOT EXISTS " +
         p +
         "fences (\n"
         "  lock_name  VARCHAR(255) NOT NULL PRIMARY KEY,\n"
         "  last_token BIGINT       NOT NULL,\n"
         "  slots      INTEGER      NULL -- group size of the holders: 0 single, N group\n"
         ");\n"
         "CREATE TABLE IF NOT EXISTS " +
         p +
         "candidates (\n"
         "  group_name      VARCHAR(255) NOT NULL,\n"
         "  node_id         VARCHAR(255) NOT NULL,\n"
         "  registered_at   INTEGER      NOT NULL, -- ms since the Unix epoch, host wall clock\n"
         "  expires_at      INTEGER      NOT NULL, -- ms, expiry clock (boots.base_ms + boot "
         "time)\n"
         "  successes       BIGINT       NOT NULL DEFAULT 0,\n"
         "  failures        BIGINT       NOT NULL DEFAULT 0,\n"
         "  last_completion INTEGER      NULL,     -- ms since the Unix epoch, client clock\n"
         "  metadata        TEXT         NOT NULL DEFAULT '{}', -- JSON object of strings\n"
         "  PRIMARY KEY (group_name, node_id)\n"
         ");\n"
         "CREATE TABLE IF NOT EXISTS " +
         p +
         "boots (\n"
         "  boot_id VARCHAR(64) NOT NULL PRIMARY KEY, -- /proc/sys/kernel/random/boot_id\n"
         "  base_ms INTEGER     NOT NULL -- expiry clock = base_ms + CLOCK_BOOTTIME (ms)\n"
         ");\n";
}

void prepare_schema(Connection& conn, const std::string& prefix, bool create) {
  // WAL lets readers proceed during writes; FULL sync keeps every granted fencing token durable
  // across power loss, so a token is never handed out twice.
  conn.exec_retrying_busy("PRAGMA journal_mode = WAL", "switching to WAL mode");
  conn.exec("PRAGMA synchronous = FULL", "setting synchronous = FULL");
  bool complete = true;  // read-only check first: a started store takes no write lock
  for (const char* table : kTables) complete = complete && has_table(conn, prefix, table);
  complete = complete && has_slots_column(conn, prefix);
  if (create && !complete) {
    conn.exec("BEGIN IMMEDIATE", "starting the schema transaction");
    try {
      conn.exec(schema_ddl(prefix).c_str(), "creating the schema");
      if (!has_slots_column(conn, prefix))  // a table created by an earlier release
        conn.exec(("ALTER TABLE " + prefix + "fences ADD COLUMN slots INTEGER NULL").c_str(),
                  "adding the column fences.slots");
      Statement version(conn, "INSERT INTO " + prefix + "schema (version) SELECT ?1 WHERE NOT " +
                                  "EXISTS (SELECT 1 FROM " + prefix + "schema)");
      ResetOnExit reset(version);
      version.bind(1, std::int64_t{kSchemaVersion}).execute("writing the schema version");
      // Version 1 kept expiries on the wall clock; the boot clock starts from the wall clock
      // (install_clock), so its rows keep their meaning and only the version changes.
      Statement upgrade(conn, "UPDATE " + prefix + "schema SET version = ?1 WHERE version = 1");
      ResetOnExit reset_upgrade(upgrade);
      upgrade.bind(1, std::int64_t{kSchemaVersion}).execute("upgrading the schema version");
      conn.exec("COMMIT", "committing the schema");
    } catch (...) {
      conn.rollback_quietly();
      throw;
    }
  } else if (!complete) {
    for (const char* table : kTables) expect_table(conn, prefix, table);
    throw sqlite_error(ErrorCode::failed_precondition,
                       "database '" + conn.path() + "': table '" + prefix +
                           "fences' lacks the column 'slots' and create_schema=false; apply the "
                           "migration of docs/sql-schema.md or open with create_schema=true");
  }
  expect_version(conn, prefix);
}

namespace {

std::int64_t boot_clock_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string read_boot_id(const Connection& conn) {
  constexpr const char* kPath = "/proc/sys/kernel/random/boot_id";
  std::ifstream in(kPath);
  std::string id;
  if (!(in >> id) || id.empty() || id.size() > 64)
    throw sqlite_error(ErrorCode::failed_precondition,
                       "database '" + conn.path() + "': cannot read this host's boot id from " +
                           kPath + " (the store's expiry clock is the host's boot clock)");
  return id;
}

// The base_ms of boot `id`, if it is registered.
std::optional<std::int64_t> boot_base(Connection& conn, const std::string& prefix,
                                      const std::string& id) {
  Statement read(conn, "SELECT base_ms FROM " + prefix + "boots WHERE boot_id = ?1");
  ResetOnExit reset(read);
  read.bind(1, id);
  if (!read.step("reading this boot's clock base")) return std::nullopt;
  return read.int_at(0);
}

void clock_function(sqlite3_context* ctx, int /*argc*/, sqlite3_value** /*argv*/) {
  const auto base = *static_cast<const std::int64_t*>(sqlite3_user_data(ctx));
  sqlite3_result_int64(ctx, base + boot_clock_ms());
}

}  // namespace

void install_clock(Connection& conn, const std::string& prefix) {
  const std::string id = read_boot_id(conn);
  std::optional<std::int64_t> base = boot_base(conn, prefix, id);
  if (!base) {  // the first store of this boot: register it (once, under the write lock)
    conn.exec("BEGIN IMMEDIATE", "starting the boot registration");
    try {
      base = boot_base(conn, prefix, id);
      if (!base) {
        // The clock continues from the wall clock. When earlier boots are registered, every
        // expiry written before (their holders died with their boot) is put in the past; when
        // none is, the rows were written under schema 1, on the wall clock, and keep their
        // meaning.
        Statement latest(conn, "SELECT CASE WHEN EXISTS (SELECT 1 FROM " + prefix +
                                   "boots) THEN max(coalesce((SELECT max(expires_at) FROM " +
                                   prefix + "leases), 0), coalesce((SELECT max(expires_at) FROM " +
                                   prefix + "candidates), 0)) ELSE 0 END");
        ResetOnExit reset_latest(latest);
        std::int64_t last_expiry = 0;
        if (latest.step("reading the latest expiry")) last_expiry = latest.int_at(0);
        const std::int64_t boot = boot_clock_ms();
        const std::int64_t wall = std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count();
        base = std::max(wall, last_expiry + 1) - boot;
        Statement put(conn, "INSERT INTO " + prefix + "boots (boot_id, base_ms) VALUES (?1, ?2)");
        ResetOnExit reset_put(put);
        put.bind(1, id).bind(2, *base).execute("registering this boot");
      }
      conn.exec("COMMIT", "committing the boot registration");
    } catch (...) {
      conn.rollback_quietly();
      throw;
    }
  }
  // sqlite owns the base from here: its destructor callback frees it when the connection closes
  // (or at once when the definition fails).
  const int rc = sqlite3_create_function_v2(
      conn.handle(), "leader_clock_ms", 0, SQLITE_UTF8, new std::int64_t(*base), clock_function,
      nullptr, nullptr, [](void* p) { delete static_cast<std::int64_t*>(p); });
  if (rc != SQLITE_OK)
    throw sqlite_error(ErrorCode::internal,
                       "database '" + conn.path() +
                           "': cannot define leader_clock_ms(): " + sqlite3_errmsg(conn.handle()));
}

SqlText SqlText::for_prefix(const std::string& p) {
  const std::string now = kClockMs;  // expiry: the host's boot clock (install_clock)
  // Shown to people only (acquired_at, registered_at): milliseconds since the Unix epoch by the
  // host's wall clock; SQLite reads 'now' once per statement.
  const std::string wall = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";
  SqlText s;
  s.held_size = "SELECT slots FROM " + p +
                "fences WHERE lock_name = ?1 AND slots IS NOT NULL AND slots <> ?2 AND EXISTS "
                "(SELECT 1 FROM " +
                p + "leases WHERE lock_name = ?1 AND expires_at > " + now + ")";
  s.renew_own = "UPDATE " + p + "leases SET expires_at = " + now +
                " + ?3 WHERE lock_name = ?1 AND owner = ?2 AND expires_at > " + now +
                " RETURNING slot, fencing_token";
  s.bump_fence = "INSERT INTO " + p +
                 "fences (lock_name, last_token, slots) VALUES (?1, 1, ?2) ON CONFLICT (lock_name) "
                 "DO UPDATE SET last_token = last_token + 1, slots = excluded.slots RETURNING "
                 "last_token";
  s.take_slot =
      "WITH RECURSIVE free (n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM free WHERE n + 1 < ?2) "
      "INSERT INTO " +
      p +
      "leases (lock_name, slot, owner, node_id, fencing_token, acquired_at, expires_at) "
      "SELECT ?1, n, ?3, ?4, ?5, " +
      wall + ", " + now + " + ?6 FROM free WHERE NOT EXISTS (SELECT 1 FROM " + p +
      "leases l WHERE l.lock_name = ?1 AND l.slot = free.n AND l.expires_at > " + now +
      ") ORDER BY n LIMIT 1 ON CONFLICT (lock_name, slot) DO UPDATE SET owner = excluded.owner, "
      "node_id = excluded.node_id, fencing_token = excluded.fencing_token, acquired_at = "
      "excluded.acquired_at, expires_at = excluded.expires_at WHERE expires_at <= " +
      now + " RETURNING slot";
  const std::string mine = " WHERE lock_name = ?1 AND slot = ?2 AND owner = ?3";
  const std::string live = " AND expires_at > " + now;
  s.renew = "UPDATE " + p + "leases SET expires_at = " + now + " + ?4" + mine + live;
  s.release = "DELETE FROM " + p + "leases" + mine + live;
  s.release_keep = "UPDATE " + p + "leases SET expires_at = " + now + " + ?4" + mine + live;
  s.inspect = "SELECT node_id, owner, fencing_token, slot, expires_at - " + now + " FROM " + p +
              "leases WHERE lock_name = ?1" + live + " ORDER BY slot";
  s.list_locks = "SELECT node_id, owner, fencing_token, slot, expires_at - " + now +
                 ", lock_name FROM " + p + "leases WHERE substr(lock_name, 1, length(?1)) = ?1" +
                 live + " ORDER BY lock_name, slot";
  s.put_candidate =
      "INSERT INTO " + p +
      "candidates (group_name, node_id, registered_at, expires_at, successes, failures, "
      "last_completion, metadata) VALUES (?1, ?2, " +
      wall + ", " + now +
      " + ?3, ?4, ?5, ?6, ?7) ON CONFLICT (group_name, node_id) DO UPDATE SET registered_at = "
      "CASE WHEN expires_at > " +
      now +
      " THEN registered_at ELSE excluded.registered_at END, expires_at = excluded.expires_at, "
      "successes = excluded.successes, failures = excluded.failures, last_completion = "
      "excluded.last_completion, metadata = excluded.metadata";
  s.list_candidates =
      "SELECT node_id, registered_at, successes, failures, last_completion, metadata FROM " + p +
      "candidates WHERE group_name = ?1" + live;
  s.remove_candidate = "DELETE FROM " + p + "candidates WHERE group_name = ?1 AND node_id = ?2";
  return s;
}

}  // namespace leader::sqlite
