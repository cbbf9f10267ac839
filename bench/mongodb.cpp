// The MongoDB store's benchmarks, **against the mongomock stand-in** (tests/doubles/mongodb: a
// Python OP_MSG shim in front of mongomock, one global lock), not a MongoDB server: the figures
// measure the store's round trips and the stand-in's Python cost, nothing about mongod.
//  - uncontended run_if_leader with a no-op action through LeaderElector (read + findAndModify,
//    then the release update: three round trips);
//  - the same acquire + release through the bare LeaseStore, renew alone, a contended try_acquire
//    (one read);
//  - the baseline measured in the same run: one `ping` command over the same connection pool (the
//    stand-in's per-command floor), and one raw conditional update.
// ops/s and p50/p99 per operation.
//
//   LEADER_BENCH_MONGODB_URI=mongodb://127.0.0.1:17017/leader_bench build/bench/bench_mongodb

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "latency.hpp"
#include "leader/leader.hpp"
#include "mongodb/mongodb_store.hpp"

namespace {

using Clock = leader::bench::Clock;
using leader::bench::micros_since;
using leader::bench::report;
using namespace std::chrono_literals;

std::string uri() {
  const char* e = std::getenv("LEADER_BENCH_MONGODB_URI");
  return e != nullptr ? e : "mongodb://127.0.0.1:17017/leader_bench";
}

leader::mongodb::MongoStore raw_store() {
  return leader::mongodb::MongoStore(leader::mongodb::Config::from_uri(leader::Uri::parse(uri())));
}

void BM_RunIfLeaderUncontended(benchmark::State& state) {
  leader::bench::run_if_leader_loop(state, uri(), 10s);
}
BENCHMARK(BM_RunIfLeaderUncontended)->UseRealTime();

void BM_StoreAcquireRelease(benchmark::State& state) {
  leader::bench::store_acquire_release_loop(state, uri(), 10s);
}
BENCHMARK(BM_StoreAcquireRelease)->UseRealTime();

void BM_StoreRenew(benchmark::State& state) {
  auto s = leader::open(uri());
  auto got = s->try_acquire({"bench-renew", leader::new_owner_token(), "bench", 60s, 0},
                            leader::Deadline::after(5s));
  if (!got) {
    state.SkipWithError("bench-renew is held");
    return;
  }
  leader::Lease lease = *got.lease;
  std::vector<double> us;
  for (auto _ : state) {
    auto t0 = Clock::now();
    if (s->renew(lease, 60s, leader::Deadline::after(5s)).status != leader::LeaseStatus::ok)
      state.SkipWithError("renew lost");
    us.push_back(micros_since(t0));
  }
  (void)s->release(lease, 0ms, leader::Deadline::after(5s));
  report(state, us);
}
BENCHMARK(BM_StoreRenew)->UseRealTime();

void BM_StoreContendedSkip(benchmark::State& state) {
  auto s = leader::open(uri());
  auto held = s->try_acquire({"bench-contended", leader::new_owner_token(), "holder", 60s, 0},
                             leader::Deadline::after(5s));
  std::vector<double> us;
  for (auto _ : state) {
    auto t0 = Clock::now();
    if (s->try_acquire({"bench-contended", leader::new_owner_token(), "bench", 10s, 0},
                       leader::Deadline::after(5s)))
      state.SkipWithError("not contended");
    us.push_back(micros_since(t0));
  }
  if (held) (void)s->release(*held.lease, 0ms, leader::Deadline::after(5s));
  report(state, us);
}
BENCHMARK(BM_StoreContendedSkip)->UseRealTime();

// Baseline: one `ping` round trip through the same libmongoc client pool.
void BM_RawPing(benchmark::State& state) {
  auto s = raw_store();
  std::vector<double> us;
  for (auto _ : state) {
    auto t0 = Clock::now();
    leader::mongodb::Doc cmd;
    BSON_APPEND_INT32(&cmd.b, "ping", 1);
    (void)s.connection().read("ping", &cmd.b, leader::Deadline::after(5s));
    us.push_back(micros_since(t0));
  }
  report(state, us);
}
BENCHMARK(BM_RawPing)->UseRealTime();

// Baseline: one conditional update of one document (what a renewal costs without the store).
void BM_RawConditionalUpdate(benchmark::State& state) {
  auto s = raw_store();
  const std::string coll = s.connection().collection("bench_raw");
  std::vector<double> us;
  for (auto _ : state) {
    auto t0 = Clock::now();
    bson_t* cmd = BCON_NEW("update", BCON_UTF8(coll.c_str()), "updates", "[", "{", "q", "{", "_id",
                           BCON_UTF8("raw"), "}", "u", "{", "$inc", "{", "n", BCON_INT64(1), "}",
                           "}", "upsert", BCON_BOOL(true), "}", "]");
    (void)s.connection().write("update", cmd, leader::Deadline::after(5s));
    bson_destroy(cmd);
    us.push_back(micros_since(t0));
  }
  report(state, us);
}
BENCHMARK(BM_RawConditionalUpdate)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
