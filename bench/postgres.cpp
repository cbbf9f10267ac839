// Uncontended run_if_leader (no-op action) and the store's acquire+release / renew on the
// PostgreSQL store, next to the same prepared statements run over one raw libpq connection in
// the same run (the baseline). Reports ops/s (items_per_second) and p50/p99 per operation.
//
//   scripts/test-servers.sh start postgres && scripts/sql-setup.sh postgres
//   build/bench/bench_postgres --benchmark_min_time=2
// Server: LEADER_BENCH_POSTGRES_URI (default postgresql://postgres@127.0.0.1:15432/leader_test).

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "../src/stores/postgres/pg_statements.hpp"
#include "latency.hpp"
#include "leader/leader.hpp"

namespace {

using Clock = leader::bench::Clock;
using namespace std::chrono_literals;

std::string base_uri() {
  const char* v = std::getenv("LEADER_BENCH_POSTGRES_URI");
  return v && *v ? v : "postgresql://postgres@127.0.0.1:15432/leader_test";
}
std::string store_uri() { return base_uri() + "?table_prefix=bench_"; }

using leader::bench::micros_since;
using leader::bench::report;

void BM_RunIfLeader(benchmark::State& state) {
  leader::bench::run_if_leader_loop(state, store_uri());
}
BENCHMARK(BM_RunIfLeader)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_StoreAcquireRelease(benchmark::State& state) {
  leader::bench::store_acquire_release_loop(state, store_uri());
}
BENCHMARK(BM_StoreAcquireRelease)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_StoreRenew(benchmark::State& state) { leader::bench::store_renew_loop(state, store_uri()); }
BENCHMARK(BM_StoreRenew)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The store's statements, prepared once on one raw blocking libpq connection.
class RawConnection {
 public:
  RawConnection() : conn_(PQconnectdb(base_uri().c_str())) {
    if (PQstatus(conn_) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(conn_));
    // The store created the tables; a raw connection only prepares the same statements.
    (void)leader::open(store_uri())->inspect("bench", leader::Deadline::after(5s));
    for (const auto& [name, sql] :
         leader::detail::pg::statements(leader::detail::pg::tables_for("bench_")))
      check(PQprepare(conn_, name.c_str(), sql.c_str(), 0, nullptr));
  }
  ~RawConnection() { PQfinish(conn_); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  /// Runs a prepared statement; returns its first value ("" if none).
  std::string exec(const char* name, std::vector<const char*> params) {
    PGresult* r = PQexecPrepared(conn_, name, static_cast<int>(params.size()), params.data(),
                                 nullptr, nullptr, 0);
    std::string out = PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : PQcmdTuples(r);
    check(r);
    return out;
  }

 private:
  void check(PGresult* r) {
    auto st = PQresultStatus(r);
    PQclear(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
      throw std::runtime_error(PQerrorMessage(conn_));
  }
  PGconn* conn_;
};

// The store's three acquire statements (fence row, fence lock, grant); the store pipelines them
// in one round trip and one transaction, here they are three autocommit round trips.
std::string raw_acquire(RawConnection& raw, const std::string& lock, const std::string& owner) {
  namespace pg = leader::detail::pg;
  raw.exec(pg::kFenceRow, {lock.c_str()});
  raw.exec(pg::kLockFence, {lock.c_str()});
  return raw.exec(pg::kGrant, {lock.c_str(), owner.c_str(), "bench", "30000", "0"});
}

void BM_RawAcquireRelease(benchmark::State& state) {
  RawConnection raw;
  const std::string lock = "bench-raw-" + std::to_string(::getpid());
  std::vector<double> us;
  for (auto _ : state) {
    const std::string owner = leader::new_owner_token();
    auto t0 = Clock::now();
    if (raw_acquire(raw, lock, owner) != "granted") throw std::runtime_error("raw acquire failed");
    raw.exec(leader::detail::pg::kRelease, {lock.c_str(), "0", owner.c_str()});
    us.push_back(micros_since(t0));
  }
  report(state, us);
}
BENCHMARK(BM_RawAcquireRelease)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_RawRenew(benchmark::State& state) {
  RawConnection raw;
  const std::string lock = "bench-rawrenew-" + std::to_string(::getpid());
  const std::string owner = leader::new_owner_token();
  (void)raw_acquire(raw, lock, owner);
  std::vector<double> us;
  for (auto _ : state) {
    auto t0 = Clock::now();
    if (raw.exec(leader::detail::pg::kRenew, {lock.c_str(), "0", owner.c_str(), "30000"}) != "1")
      throw std::runtime_error("raw renew lost");
    us.push_back(micros_since(t0));
  }
  raw.exec(leader::detail::pg::kRelease, {lock.c_str(), "0", owner.c_str()});
  report(state, us);
}
BENCHMARK(BM_RawRenew)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
