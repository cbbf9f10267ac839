// Uncontended run_if_leader (no-op action) and the store's acquire+release / renew on the
// MariaDB store, next to the same prepared statements run over one raw libmariadb connection
// (blocking API) in the same run (the baseline), and ShedLock's two statements
// (BM_ShedLockAcquireRelease, the peer of bench/README.md "PostgreSQL and MariaDB against
// ShedLock"). Reports ops/s (items_per_second) and p50/p99.
//
//   scripts/test-servers.sh start mariadb && scripts/sql-setup.sh mariadb
//   build/bench/bench_mysql --benchmark_min_time=2
// Server: 127.0.0.1:13306, user root, database leader_test (LEADER_BENCH_MYSQL_URI for the
// store; the raw baseline always uses those defaults).

#include <benchmark/benchmark.h>
#include <mysql.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "../src/stores/mysql/my_statements.hpp"
#include "leader/leader.hpp"
#include "support.hpp"

namespace {

using namespace std::chrono_literals;

std::string store_uri() {
  return leader::bench::env_or("LEADER_BENCH_MYSQL_URI",
                               "mysql://root@127.0.0.1:13306/leader_test?table_prefix=bench_");
}

[[maybe_unused]] const bool kStoreLoops = leader::bench::register_store_loops(store_uri, 30s);

// The store's statements, prepared once on one raw blocking connection; parameters as text.
class RawConnection {
 public:
  RawConnection() : mysql_(mysql_init(nullptr)) {
    if (!mysql_real_connect(mysql_, "127.0.0.1", "root", nullptr, "leader_test", 13306, nullptr,
                            CLIENT_FOUND_ROWS))
      throw std::runtime_error(mysql_error(mysql_));
    // The store created the schema; the raw connection only prepares the same statements.
    (void)leader::open(store_uri())->inspect("bench", leader::Deadline::after(5s));
    for (const auto& [name, sql] : leader::mysql::statements(leader::mysql::tables_for("bench_"))) {
      MYSQL_STMT* s = mysql_stmt_init(mysql_);
      if (mysql_stmt_prepare(s, sql.c_str(), sql.size())) throw std::runtime_error(sql);
      stmts_[name] = s;
    }
  }
  ~RawConnection() {
    for (auto& [n, s] : stmts_) mysql_stmt_close(s);
    mysql_close(mysql_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  /// Executes a prepared statement, drains every result; returns the affected-row count.
  std::uint64_t exec(const std::string& name, const std::vector<std::string>& params) {
    MYSQL_STMT* s = stmts_.at(name);
    std::vector<MYSQL_BIND> b(params.size());
    std::vector<unsigned long> len(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      std::memset(&b[i], 0, sizeof b[i]);
      len[i] = params[i].size();
      b[i].buffer_type = MYSQL_TYPE_STRING;
      b[i].buffer = const_cast<char*>(params[i].data());
      b[i].buffer_length = len[i];
      b[i].length = &len[i];
    }
    if (mysql_stmt_bind_param(s, b.data()) || mysql_stmt_execute(s))
      throw std::runtime_error(mysql_stmt_error(s));
    std::uint64_t affected = mysql_stmt_affected_rows(s);
    for (;;) {
      if (mysql_stmt_field_count(s) > 0) {
        mysql_stmt_store_result(s);
        while (mysql_stmt_fetch(s) == 0) {
        }
        mysql_stmt_free_result(s);
      }
      if (!mysql_stmt_more_results(s) || mysql_stmt_next_result(s) != 0) break;
    }
    return affected;
  }

 private:
  MYSQL* mysql_;
  std::map<std::string, MYSQL_STMT*> stmts_;
};

void BM_RawAcquireRelease(benchmark::State& state) {
  RawConnection raw;
  const std::string lock = "bench-raw-" + std::to_string(::getpid());
  leader::bench::timed_loop(state, "raw acquire/release", [&] {
    const std::string owner = leader::new_owner_token();
    raw.exec(leader::mysql::kAcquire, {lock, owner, "bench", "30000", "0"});
    return raw.exec(leader::mysql::kRelease, {lock, "0", owner}) == 1;
  });
}
BENCHMARK(BM_RawAcquireRelease)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_RawRenew(benchmark::State& state) {
  RawConnection raw;
  const std::string lock = "bench-rawrenew-" + std::to_string(::getpid());
  const std::string owner = leader::new_owner_token();
  raw.exec(leader::mysql::kAcquire, {lock, owner, "bench", "30000", "0"});
  leader::bench::timed_loop(state, "raw renew", [&] {
    return raw.exec(leader::mysql::kRenew, {"30000000", lock, "0", owner}) == 1;
  });
  raw.exec(leader::mysql::kRelease, {lock, "0", owner});
}
BENCHMARK(BM_RawRenew)->Unit(benchmark::kMicrosecond)->UseRealTime();

// ShedLock's JdbcTemplateLockProvider statements for MySQL/MariaDB with usingDbTime() on its own
// table shape, prepared once (binary protocol) over one raw blocking connection: the peer the
// store's acquire + release is compared with (the ratio of their p50 in the same run).
void BM_ShedLockAcquireRelease(benchmark::State& state) {
  MYSQL* m = mysql_init(nullptr);
  if (!mysql_real_connect(m, "127.0.0.1", "root", nullptr, "leader_test", 13306, nullptr,
                          CLIENT_FOUND_ROWS))
    throw std::runtime_error(mysql_error(m));
  const std::string name = "bench-shedlock-" + std::to_string(::getpid());
  for (const std::string& sql :
       {std::string("CREATE TABLE IF NOT EXISTS bench_shedlock (name VARCHAR(64) NOT NULL,"
                    " lock_until TIMESTAMP(3) NOT NULL, locked_at TIMESTAMP(3) NOT NULL DEFAULT"
                    " CURRENT_TIMESTAMP(3), locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))"),
        "INSERT IGNORE INTO bench_shedlock VALUES ('" + name +
            "', UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), 'bench')"})
    if (mysql_query(m, sql.c_str())) throw std::runtime_error(mysql_error(m));
  auto prepare = [&](const std::string& sql) {
    MYSQL_STMT* st = mysql_stmt_init(m);
    if (mysql_stmt_prepare(st, sql.c_str(), sql.size())) throw std::runtime_error(sql);
    return st;
  };
  MYSQL_STMT* lock = prepare(
      "UPDATE bench_shedlock SET lock_until = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(3)),"
      " locked_at = UTC_TIMESTAMP(3), locked_by = ? WHERE name = ? AND lock_until <="
      " UTC_TIMESTAMP(3)");
  MYSQL_STMT* unlock = prepare(
      "UPDATE bench_shedlock SET lock_until = UTC_TIMESTAMP(3) WHERE name = ? AND locked_by = ?");
  auto exec = [](MYSQL_STMT* st, std::vector<std::string> params) {
    std::vector<MYSQL_BIND> b(params.size());
    std::vector<unsigned long> len(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      std::memset(&b[i], 0, sizeof b[i]);
      len[i] = params[i].size();
      b[i].buffer_type = MYSQL_TYPE_STRING;
      b[i].buffer = params[i].data();
      b[i].buffer_length = len[i];
      b[i].length = &len[i];
    }
    if (mysql_stmt_bind_param(st, b.data()) || mysql_stmt_execute(st))
      throw std::runtime_error(mysql_stmt_error(st));
    return mysql_stmt_affected_rows(st);
  };
  leader::bench::timed_loop(state, "shedlock lock", [&] {
    if (exec(lock, {"30000000", "bench", name}) != 1) return false;
    exec(unlock, {name, "bench"});
    return true;
  });
  mysql_stmt_close(lock);
  mysql_stmt_close(unlock);
  (void)mysql_query(m, ("DELETE FROM bench_shedlock WHERE name = '" + name + "'").c_str());
  mysql_close(m);
}
BENCHMARK(BM_ShedLockAcquireRelease)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
