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

#include "leader/leader.hpp"
#include "mongodb/mongodb_store.hpp"
#include "support.hpp"

namespace {

using leader::bench::soon;
using namespace std::chrono_literals;

std::string uri() {
  return leader::bench::env_or("LEADER_BENCH_MONGODB_URI",
                               "mongodb://127.0.0.1:17017/leader_bench");
}

leader::mongodb::MongoStore raw_store() {
  return leader::mongodb::MongoStore(leader::mongodb::Config::from_uri(leader::Uri::parse(uri())));
}

[[maybe_unused]] const bool kStoreLoops = leader::bench::register_store_loops(uri, 10s);

// Baseline: one `ping` round trip through the same libmongoc client pool.
void BM_RawPing(benchmark::State& state) {
  auto s = raw_store();
  leader::bench::timed_loop(state, "ping", [&] {
    leader::mongodb::Doc cmd;
    BSON_APPEND_INT32(&cmd.b, "ping", 1);
    (void)s.connection().read("ping", &cmd.b, soon());
    return true;
  });
}
BENCHMARK(BM_RawPing)->UseRealTime();

// Baseline: one conditional update of one document (what a renewal costs without the store).
void BM_RawConditionalUpdate(benchmark::State& state) {
  auto s = raw_store();
  const std::string coll = s.connection().collection("bench_raw");
  leader::bench::timed_loop(state, "update", [&] {
    bson_t* cmd = BCON_NEW("update", BCON_UTF8(coll.c_str()), "updates", "[", "{", "q", "{", "_id",
                           BCON_UTF8("raw"), "}", "u", "{", "$inc", "{", "n", BCON_INT64(1), "}",
                           "}", "upsert", BCON_BOOL(true), "}", "]");
    (void)s.connection().write("update", cmd, soon());
    bson_destroy(cmd);
    return true;
  });
}
BENCHMARK(BM_RawConditionalUpdate)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
