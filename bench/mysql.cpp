// Uncontended run_if_leader (no-op action) and the store's acquire+release / renew on the
// MariaDB store, next to the same prepared statements run over one raw libmariadb connection
// (blocking API) in the same run (the baseline). Reports ops/s (items_per_second) and p50/p99.
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

}  // namespace

BENCHMARK_MAIN();
