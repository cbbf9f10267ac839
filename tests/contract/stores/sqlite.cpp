// The contract suite against the sqlite store: one database file per test-binary run, shared by
// every client and child process of the run. An outage is a raw connection holding BEGIN EXCLUSIVE:
// every write gets SQLITE_BUSY until it rolls back (in WAL mode reads still proceed; an EXCLUSIVE
// locking-mode connection cannot start while the stores' connections are open).

#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

#include "contract.hpp"

namespace {

// The database of this run; removed (with its -wal and -shm files) when the process exits.
const std::string& db_path() {
  static const std::string* path = [] {
    auto* p = new std::string("/tmp/leader-contract-" + std::to_string(getpid()) + ".db");
    std::atexit([] {
      for (const char* suffix : {"", "-wal", "-shm"}) std::remove((db_path() + suffix).c_str());
    });
    return p;
  }();
  return *path;
}

std::mutex outage_mu;
sqlite3* outage_db = nullptr;

void check(int rc, sqlite3* db, const char* what) {
  if (rc != SQLITE_OK)
    throw std::runtime_error(std::string("sqlite outage hook: ") + what + ": " +
                             (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
}

void outage_begin() {
  std::lock_guard lock(outage_mu);
  if (outage_db != nullptr) return;
  check(sqlite3_open(db_path().c_str(), &outage_db), outage_db, "open");
  sqlite3_busy_timeout(outage_db, 2000);  // lets in-flight transactions finish
  check(sqlite3_exec(outage_db, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), outage_db,
        "BEGIN EXCLUSIVE");
}

void outage_end() {
  std::lock_guard lock(outage_mu);
  if (outage_db == nullptr) return;
  sqlite3_exec(outage_db, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(outage_db);
  outage_db = nullptr;
}

leader::contract::Backend make_sqlite_backend() {
  leader::contract::Backend b;
  b.name = "sqlite";
  b.open = [] { return leader::open("sqlite://" + db_path()); };
  b.uri = "sqlite://" + db_path();
  b.outage_begin = outage_begin;
  b.outage_end = outage_end;
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(Sqlite, make_sqlite_backend);
