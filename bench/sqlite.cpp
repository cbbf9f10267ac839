// Uncontended acquire + release on the sqlite store, through the LeaseStore interface, against
// the same SQL statements run directly over one raw sqlite3 connection (the baseline, measured
// in the same run on the same kind of file: WAL, synchronous=FULL). Reports ops/s and p50/p99.
//
//   build/bench/bench_sqlite --benchmark_min_time=2

#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "../src/stores/sqlite/schema.hpp"
#include "leader/leader.hpp"
#include "support.hpp"

namespace {

std::string bench_db(const std::string& dir, const std::string& tag) {
  std::string path = dir + "/leader-bench-" + tag + "-" + std::to_string(getpid()) + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

void remove_db(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
}

void BM_StoreAcquireRelease(benchmark::State& state, const char* dir) {
  const std::string path = bench_db(dir, "store");
  leader::bench::store_acquire_release_loop(state, "sqlite://" + path);
  remove_db(path);
}
// disk: /tmp on the machine's disk (every commit fsyncs); shm: tmpfs, where fsync is free and
// the difference to the baseline is the store's own overhead.
BENCHMARK_CAPTURE(BM_StoreAcquireRelease, disk, "/tmp")
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_StoreAcquireRelease, shm, "/dev/shm")
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The store's statements, prepared once on one raw connection.
class RawStatements {
 public:
  explicit RawStatements(const std::string& path) {
    check(sqlite3_open(path.c_str(), &db_));
    exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL");
    exec(leader::sqlite::schema_ddl("leader_").c_str());
    auto sql = leader::sqlite::SqlText::for_prefix("leader_");
    begin_ = prepare("BEGIN IMMEDIATE");
    commit_ = prepare("COMMIT");
    bump_ = prepare(sql.bump_fence);
    take_ = prepare(sql.take_slot);
    release_ = prepare(sql.release);
  }
  ~RawStatements() {
    for (auto* s : {begin_, commit_, bump_, take_, release_}) sqlite3_finalize(s);
    sqlite3_close(db_);
  }

  void acquire_release(const std::string& owner) {
    run(begin_);
    sqlite3_bind_text(bump_, 1, "bench", -1, SQLITE_STATIC);
    if (sqlite3_step(bump_) != SQLITE_ROW) throw std::runtime_error("bump");
    const auto token = sqlite3_column_int64(bump_, 0);
    run(bump_);
    sqlite3_bind_text(take_, 1, "bench", -1, SQLITE_STATIC);
    sqlite3_bind_int64(take_, 2, 1);
    sqlite3_bind_text(take_, 3, owner.c_str(), -1, SQLITE_STATIC);
    sqlite3_bind_text(take_, 4, "bench-node", -1, SQLITE_STATIC);
    sqlite3_bind_int64(take_, 5, token);
    sqlite3_bind_int64(take_, 6, 30000);
    if (sqlite3_step(take_) != SQLITE_ROW) throw std::runtime_error("take");
    run(take_);
    run(commit_);
    sqlite3_bind_text(release_, 1, "bench", -1, SQLITE_STATIC);
    sqlite3_bind_int64(release_, 2, 0);
    sqlite3_bind_text(release_, 3, owner.c_str(), -1, SQLITE_STATIC);
    run(release_);
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) throw std::runtime_error(sqlite3_errstr(rc));
  }
  void exec(const char* sql) { check(sqlite3_exec(db_, sql, nullptr, nullptr, nullptr)); }
  sqlite3_stmt* prepare(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    check(sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr));
    return s;
  }
  void run(sqlite3_stmt* s) {
    int rc = sqlite3_step(s);
    while (rc == SQLITE_ROW) rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) throw std::runtime_error(sqlite3_errmsg(db_));
  }

  sqlite3* db_ = nullptr;
  sqlite3_stmt *begin_ = nullptr, *commit_ = nullptr, *bump_ = nullptr, *take_ = nullptr,
               *release_ = nullptr;
};

void BM_RawSqliteAcquireRelease(benchmark::State& state, const char* dir) {
  const std::string path = bench_db(dir, "raw");
  {
    RawStatements raw(path);
    const std::string owner = leader::new_owner_token();
    leader::bench::timed_loop(state, "raw acquire/release", [&] {
      raw.acquire_release(owner);
      return true;
    });
  }
  remove_db(path);
}
BENCHMARK_CAPTURE(BM_RawSqliteAcquireRelease, disk, "/tmp")
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_RawSqliteAcquireRelease, shm, "/dev/shm")
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
