// The DynamoDB store's benchmarks (see bench/README.md, section dynamodb), all against the same
// dynalite in one run:
//  - uncontended run_if_leader with a no-op action through LeaderElector (one conditional
//    UpdateItem to acquire, one to release);
//  - the same acquire + release through the bare LeaseStore, and a contended try_acquire (one
//    consistent GetItem once the process has seen the lock held);
//  - the raw operation: one conditional UpdateItem (SET v = :new IF v = :old) over the store's
//    own client (one kept-alive connection when single-threaded), and the raw pair of
//    UpdateItems the store sends for acquire + release, built by hand.
// ops/s and p50/p99 per operation.
//
//   LEADER_BENCH_DYNAMODB_ADDR=127.0.0.1:18000 build/bench/bench_dynamodb

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "dynamodb/dynamodb_store.hpp"
#include "leader/leader.hpp"
#include "support.hpp"

namespace {

using Clock = leader::bench::Clock;
using namespace std::chrono_literals;
namespace ddb = leader::dynamodb;

std::string uri() {
  return "dynamodb://bench:bench@" +
         leader::bench::env_or("LEADER_BENCH_DYNAMODB_ADDR", "127.0.0.1:18000") +
         "?tls=false&table=leader_bench";
}

ddb::DynamoStore open_raw() {
  return ddb::DynamoStore(ddb::Config::from_uri(leader::Uri::parse(uri())));
}

using leader::bench::micros_since;
using leader::bench::report;

[[maybe_unused]] const bool kStoreLoops = leader::bench::register_store_loops(uri, 10s, 600s);

// The raw operation: one conditional UpdateItem, each iteration conditioned on the last value.
void BM_RawConditionalUpdateItem(benchmark::State& state) {
  auto s = open_raw();
  const nlohmann::json key = ddb::item_key("bench-raw", "cas");
  const std::string table = s.client().config().table;
  std::string last = "0";
  s.client().call("PutItem",
                  {{"TableName", table},
                   {"Item", {{"pk", key["pk"]}, {"sk", key["sk"]}, {"v", ddb::s_value(last)}}}},
                  leader::Deadline::after(5s));
  std::vector<double> us;
  for (auto _ : state) {
    std::string next = leader::new_owner_token();
    auto t0 = Clock::now();
    auto r = s.client().post("UpdateItem",
                             {{"TableName", table},
                              {"Key", key},
                              {"UpdateExpression", "SET #v = :new"},
                              {"ConditionExpression", "#v = :old"},
                              {"ExpressionAttributeNames", {{"#v", "v"}}},
                              {"ExpressionAttributeValues",
                               {{":new", ddb::s_value(next)}, {":old", ddb::s_value(last)}}}},
                             leader::Deadline::after(5s));
    us.push_back(micros_since(t0));
    if (!r.ok()) {
      state.SkipWithError("conditional UpdateItem failed");
      break;
    }
    last = next;
  }
  report(state, us);
}
BENCHMARK(BM_RawConditionalUpdateItem)->UseRealTime();

// The two UpdateItems of an acquire + release, written by hand over the same client.
void BM_RawAcquireReleasePair(benchmark::State& state) {
  auto s = open_raw();
  const nlohmann::json key = ddb::item_key("bench-raw-pair", "lease");
  const std::string table = s.client().config().table;
  const nlohmann::json names = {{"#f", "fence"}, {"#t", "t0"}, {"#o", "o0"},   {"#h", "h0"},
                                {"#v", "v0"},    {"#d", "d0"}, {"#sv", "sv0"}, {"#s", "s0"}};
  nlohmann::json release_names = names;
  release_names.erase("#f");
  std::vector<double> us;
  for (auto _ : state) {
    const std::string owner = leader::new_owner_token();
    auto t0 = Clock::now();
    auto a = s.client().post(
        "UpdateItem",
        {{"TableName", table},
         {"Key", key},
         {"UpdateExpression",
          "SET #f = if_not_exists(#f, :zero) + :one, #t = if_not_exists(#f, :zero) + :one, "
          "#o = :o, #h = :h, #v = :v, #d = :d REMOVE #sv, #s"},
         {"ConditionExpression", "attribute_not_exists(#o)"},
         {"ExpressionAttributeNames", names},
         {"ExpressionAttributeValues",
          {{":zero", ddb::n_value(0)},
           {":one", ddb::n_value(1)},
           {":o", ddb::s_value(owner)},
           {":h", ddb::s_value("bench")},
           {":v", ddb::s_value(leader::new_owner_token())},
           {":d", ddb::n_value(10000)}}},
         {"ReturnValues", "UPDATED_NEW"}},
        leader::Deadline::after(5s));
    auto r = s.client().post("UpdateItem",
                             {{"TableName", table},
                              {"Key", key},
                              {"UpdateExpression", "REMOVE #o, #h, #v, #d, #t, #sv, #s"},
                              {"ConditionExpression", "#o = :me"},
                              {"ExpressionAttributeNames", release_names},
                              {"ExpressionAttributeValues", {{":me", ddb::s_value(owner)}}}},
                             leader::Deadline::after(5s));
    us.push_back(micros_since(t0));
    if (!a.ok() || !r.ok()) {
      state.SkipWithError("raw acquire/release failed");
      break;
    }
  }
  report(state, us);
}
BENCHMARK(BM_RawAcquireReleasePair)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
