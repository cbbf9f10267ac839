// Uncontended run_if_leader (no-op action) and the store's acquire+release / renew on the
// PostgreSQL store, next to the same prepared statements run over one raw libpq connection in
// the same run (the baseline), and ShedLock's two statements (BM_ShedLockAcquireRelease, the peer
// of bench/README.md "PostgreSQL and MariaDB against ShedLock"). Reports ops/s (items_per_second)
// and p50/p99 per operation.
// The cost of the watchers' NOTIFY: run_if_leader on a store whose statements notify nothing
// (BM_RunIfLeaderWithoutNotify, the store as it was before it watched) and while another lock of
// the same tables is watched (BM_RunIfLeaderWhileWatched: a listener to signal at each commit).
//
//   scripts/test-servers.sh start postgres && scripts/sql-setup.sh postgres
//   build/bench/bench_postgres --benchmark_min_time=2
//   build/bench/bench_postgres --benchmark_filter=RunIfLeader --benchmark_repetitions=5
//     --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
//   (one command line)
// Server: LEADER_BENCH_POSTGRES_URI (default postgresql://postgres@127.0.0.1:15432/leader_test).

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../src/stores/postgres/pg_statements.hpp"
#include "../src/stores/postgres/postgres_store.hpp"
#include "leader/leader.hpp"
#include "support.hpp"

namespace {

using namespace std::chrono_literals;

std::string base_uri() {
  return leader::bench::env_or("LEADER_BENCH_POSTGRES_URI",
                               "postgresql://postgres@127.0.0.1:15432/leader_test");
}
std::string store_uri() { return base_uri() + "?table_prefix=bench_"; }

[[maybe_unused]] const bool kStoreLoops = leader::bench::register_store_loops(store_uri, 30s);

// The store's statements, prepared once on one raw blocking libpq connection.
class RawConnection {
 public:
  RawConnection() : conn_(PQconnectdb(base_uri().c_str())) {
    if (PQstatus(conn_) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(conn_));
    // The store created the tables; a raw connection only prepares the same statements.
    (void)leader::open(store_uri())->inspect("bench", leader::Deadline::after(5s));
    for (const auto& [name, sql] :
         leader::postgres::statements(leader::postgres::tables_for("bench_")))
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

// The statement the store sends for an uncontended single acquisition (one round trip).
std::string raw_acquire(RawConnection& raw, const std::string& lock, const std::string& owner) {
  return raw.exec(leader::postgres::kAcquireSingle,
                  {lock.c_str(), owner.c_str(), "bench", "30000"});
}

void BM_RawAcquireRelease(benchmark::State& state) {
  RawConnection raw;
  const std::string lock = "bench-raw-" + std::to_string(::getpid());
  leader::bench::timed_loop(state, "raw acquire", [&] {
    const std::string owner = leader::new_owner_token();
    if (raw_acquire(raw, lock, owner) != "granted") return false;
    raw.exec(leader::postgres::kRelease, {lock.c_str(), "0", owner.c_str()});
    return true;
  });
}
BENCHMARK(BM_RawAcquireRelease)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_RawRenew(benchmark::State& state) {
  RawConnection raw;
  const std::string lock = "bench-rawrenew-" + std::to_string(::getpid());
  const std::string owner = leader::new_owner_token();
  (void)raw_acquire(raw, lock, owner);
  leader::bench::timed_loop(state, "raw renew", [&] {
    return raw.exec(leader::postgres::kRenew, {lock.c_str(), "0", owner.c_str(), "30000"}) == "1";
  });
  raw.exec(leader::postgres::kRelease, {lock.c_str(), "0", owner.c_str()});
}
BENCHMARK(BM_RawRenew)->Unit(benchmark::kMicrosecond)->UseRealTime();

// ShedLock's JdbcTemplateLockProvider statements (usingDbTime) on its own table shape, prepared
// once over one raw blocking libpq connection: the peer the store's acquire + release is compared
// with (the ratio of their p50 in the same run).
void BM_ShedLockAcquireRelease(benchmark::State& state) {
  PGconn* c = PQconnectdb(base_uri().c_str());
  auto ok = [&](PGresult* r) {
    auto st = PQresultStatus(r);
    std::string affected = PQcmdTuples(r);
    PQclear(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
      throw std::runtime_error(PQerrorMessage(c));
    return affected;
  };
  const std::string name = "bench-shedlock-" + std::to_string(::getpid());
  ok(PQexec(c,
            "CREATE TABLE IF NOT EXISTS bench_shedlock (name VARCHAR(64) NOT NULL PRIMARY KEY,"
            " lock_until TIMESTAMP NOT NULL, locked_at TIMESTAMP NOT NULL,"
            " locked_by VARCHAR(255) NOT NULL)"));
  const char* insert_args[] = {name.c_str()};
  ok(PQexecParams(c,
                  "INSERT INTO bench_shedlock VALUES ($1, now(), now(), 'bench')"
                  " ON CONFLICT DO NOTHING",
                  1, nullptr, insert_args, nullptr, nullptr, 0));
  ok(PQprepare(c, "lock",
               "UPDATE bench_shedlock SET lock_until = now() + cast($1 AS interval),"
               " locked_at = now(), locked_by = $2 WHERE name = $3 AND lock_until <= now()",
               3, nullptr));
  ok(PQprepare(c, "unlock",
               "UPDATE bench_shedlock SET lock_until = now() WHERE name = $1 AND locked_by = $2", 2,
               nullptr));
  const char* lock_args[] = {"30 seconds", "bench", name.c_str()};
  const char* unlock_args[] = {name.c_str(), "bench"};
  leader::bench::timed_loop(state, "shedlock lock", [&] {
    if (ok(PQexecPrepared(c, "lock", 3, lock_args, nullptr, nullptr, 0)) != "1") return false;
    ok(PQexecPrepared(c, "unlock", 2, unlock_args, nullptr, nullptr, 0));
    return true;
  });
  ok(PQexecParams(c, "DELETE FROM bench_shedlock WHERE name = $1", 1, nullptr, insert_args, nullptr,
                  nullptr, 0));
  PQfinish(c);
}
BENCHMARK(BM_ShedLockAcquireRelease)->Unit(benchmark::kMicrosecond)->UseRealTime();

// run_if_leader as BM_RunIfLeaderUncontended does, on `store`.
void run_if_leader_on(benchmark::State& state, std::shared_ptr<leader::LeaseStore> store) {
  leader::LeaderElector elector(std::move(store),
                                {.wait_time = 0ms, .lease_time = 30s, .node_id = "bench"});
  const std::string lock = leader::bench::bench_lock("run");
  leader::bench::timed_loop(state, "uncontended run_if_leader",
                            [&] { return static_cast<bool>(elector.run_if_leader(lock, [] {})); });
}

// The same store with statements that notify nothing (an empty channel): the baseline.
void BM_RunIfLeaderWithoutNotify(benchmark::State& state) {
  namespace pg = leader::postgres;
  pg::Config options = pg::Config::from_uri(leader::Uri::parse(store_uri()));
  options.tables.channel.clear();
  run_if_leader_on(
      state, leader::detail::checked(std::make_shared<pg::PostgresStore>(std::move(options))));
}
BENCHMARK(BM_RunIfLeaderWithoutNotify)->UseRealTime();

// The notifying store while another process-local observer watches another lock of the tables:
// each commit now signals one listening session, whose watch reads the payload and waits on.
void BM_RunIfLeaderWhileWatched(benchmark::State& state) {
  auto store = leader::open(store_uri());
  std::jthread observer([&](const std::stop_token& stop) {
    leader::observe_lock(
        *store, leader::bench::bench_lock("watched"), [](const leader::LockState&) { return true; },
        stop);
  });
  std::this_thread::sleep_for(200ms);  // listening
  run_if_leader_on(state, store);
}
BENCHMARK(BM_RunIfLeaderWhileWatched)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
