// migration-gate: one replica migrates the schema, the others wait until it is done and then
// start. The migrator writes its fencing token into the schema version table; the final write
// only succeeds if the table still holds that token, so a migrator that was paused past its lease
// (and replaced by another replica with a higher token) is rejected instead of clobbering the
// newer migration.
//
//   example_migration_gate <postgres-uri> <replica> [--reset] [--lock NAME]
//                          [--lease-ms N] [--migrate-ms N]
//
// Output lines (one event each, the test driver greps them):
//   CLAIMED replica=<r> token=<t>          the migrator's token is now in the version table
//   MIGRATED replica=<r> token=<t> version=2
//   REJECTED replica=<r> token=<t> current=<t'>   a stale migrator's final write was refused
//   WAITING replica=<r>                    another replica migrates; this one waits
//   STARTED replica=<r> version=2          the schema is current: the service starts
#include <libpq-fe.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <leader/leader.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../common.hpp"

namespace {

using namespace std::chrono_literals;

constexpr int kTargetVersion = 2;

struct PgDeleter {
  void operator()(PGconn* c) const { PQfinish(c); }
};
using Connection = std::unique_ptr<PGconn, PgDeleter>;

// Runs one statement with text parameters; throws on any error, returns the result.
std::unique_ptr<PGresult, void (*)(PGresult*)> exec(
    PGconn* c, const char* sql, std::initializer_list<std::string> params = {}) {
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p.c_str());
  PGresult* r = PQexecParams(c, sql, static_cast<int>(values.size()), nullptr, values.data(),
                             nullptr, nullptr, 0);
  std::unique_ptr<PGresult, void (*)(PGresult*)> result(r, PQclear);
  auto status = PQresultStatus(r);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    throw std::runtime_error(std::string("postgres: ") + PQerrorMessage(c));
  }
  return result;
}

Connection connect(const std::string& uri) {
  // The leader URI may carry store options after '?'; libpq gets the bare URI.
  Connection c(PQconnectdb(uri.substr(0, uri.find('?')).c_str()));
  if (PQstatus(c.get()) != CONNECTION_OK) {
    throw std::runtime_error(std::string("postgres: ") + PQerrorMessage(c.get()));
  }
  exec(c.get(), "SET client_min_messages = warning");
  return c;
}

void reset(PGconn* c) {
  exec(c, "DROP TABLE IF EXISTS example_migration_orders");
  exec(c, "DROP TABLE IF EXISTS example_migration_schema_version");
  exec(c,
       "CREATE TABLE example_migration_schema_version (id int PRIMARY KEY, version int NOT NULL, "
       "fencing_token bigint NOT NULL, migrated_by text)");
  exec(c, "INSERT INTO example_migration_schema_version VALUES (1, 1, 0, NULL)");
}

int schema_version(PGconn* c) {
  auto r = exec(c, "SELECT version FROM example_migration_schema_version WHERE id = 1");
  if (PQntuples(r.get()) != 1) throw std::runtime_error("schema version row missing (--reset)");
  return std::atoi(PQgetvalue(r.get(), 0, 0));
}

// The migration, fenced by `token`. Returns false when a newer migrator took over.
bool migrate(PGconn* c, const std::string& replica, std::uint64_t token,
             std::chrono::milliseconds work) {
  // Another replica may have finished between our version check and our election.
  if (schema_version(c) >= kTargetVersion) return true;
  const std::string t = std::to_string(token);
  // 1. Claim: store our token unless a higher one is already there.
  auto claim = exec(c,
                    "UPDATE example_migration_schema_version SET fencing_token = $1 "
                    "WHERE id = 1 AND fencing_token < $1",
                    {t});
  if (std::string(PQcmdTuples(claim.get())) != "1") {
    std::printf("REJECTED replica=%s token=%s current=higher\n", replica.c_str(), t.c_str());
    return false;
  }
  std::printf("CLAIMED replica=%s token=%s\n", replica.c_str(), t.c_str());
  std::fflush(stdout);
  // 2. The long part of the migration (a backfill, say). A replica paused here past its lease
  //    loses the lock; another replica claims with a higher token.
  std::this_thread::sleep_for(work);
  // 3. Commit the schema change only if the table still holds our token.
  exec(c, "BEGIN");
  auto row = exec(c,
                  "SELECT fencing_token FROM example_migration_schema_version WHERE id = 1 "
                  "FOR UPDATE");
  std::string current = PQgetvalue(row.get(), 0, 0);
  if (current != t) {
    exec(c, "ROLLBACK");
    std::printf("REJECTED replica=%s token=%s current=%s\n", replica.c_str(), t.c_str(),
                current.c_str());
    return false;
  }
  exec(c,
       "CREATE TABLE IF NOT EXISTS example_migration_orders (id bigserial PRIMARY KEY, "
       "total_cents bigint NOT NULL)");
  exec(c, "UPDATE example_migration_schema_version SET version = $1, migrated_by = $2 WHERE id = 1",
       {std::to_string(kTargetVersion), replica});
  exec(c, "COMMIT");
  std::printf("MIGRATED replica=%s token=%s version=%d\n", replica.c_str(), t.c_str(),
              kTargetVersion);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "<postgres-uri> <replica> [--reset] [--lock NAME] [--lease-ms N] [--migrate-ms N]";
  return example::run(argc, argv, usage, [](const example::Args& args) {
    const std::string& uri = args.at(0);
    const std::string& replica = args.at(1);
    const std::string lock = args.get("--lock", "schema-migration");
    const long lease_ms = args.number("--lease-ms", 2000);
    const long migrate_ms = args.number("--migrate-ms", 300);
    auto db = connect(uri);
    if (args.has("--reset")) {
      reset(db.get());
      std::printf("RESET version=1\n");
      return 0;
    }
    leader::LeaderElector elector(
        leader::open(uri),
        {.wait_time = 0s, .lease_time = std::chrono::milliseconds(lease_ms), .node_id = replica});
    bool said_waiting = false;
    const auto give_up = std::chrono::steady_clock::now() + 60s;
    while (schema_version(db.get()) < kTargetVersion) {
      if (std::chrono::steady_clock::now() > give_up) {
        throw std::runtime_error("schema still not migrated after 60 s");
      }
      bool ran = elector.run_if_leader(lock, [&](leader::LeaderContext& ctx) {
        migrate(db.get(), replica, ctx.fencing_token(), std::chrono::milliseconds(migrate_ms));
      });
      if (!ran) {
        if (!said_waiting) std::printf("WAITING replica=%s\n", replica.c_str());
        said_waiting = true;
      }
      std::this_thread::sleep_for(100ms);
    }
    std::printf("STARTED replica=%s version=%d\n", replica.c_str(), kTargetVersion);
    return 0;
  });
}
