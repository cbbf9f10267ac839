// The etcd store's benchmarks (see bench/README.md, section etcd), all against the same server:
//  - uncontended run_if_leader with a no-op action through LeaderElector (one Txn putting the
//    key on the store's session lease, one Txn deleting it: two round trips, issue 14 target 2);
//  - the same acquire + release through the bare LeaseStore, and a contended try_acquire;
//  - the raw operation measured in the same run: one compare-and-set Txn over the same gateway
//    client (the store's HTTP connection pool, no lease), the two raw Txns an election needs on
//    a session lease granted once (BM_RawSessionCycle: the ratio's baseline), and the three calls
//    of a lease per election (BM_RawLeaseCycle: grant + Txn + revoke, the design before);
//  - etcdctl doing the same work: `etcdctl lock <key> -- true` per iteration (a process each:
//    session lease, Mutex Txn, command, unlock, revoke), next to `etcdctl put` (the process and
//    gRPC connection cost alone) and `leader run -- true` (our CLI, when built next to us).
// ops/s and p50/p99 per operation.
//
//   LEADER_BENCH_ETCD_ENDPOINT=127.0.0.1:12379 build-etcd/bench/bench_etcd

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "clients/etcd/ops.hpp"
#include "etcd/etcd_store.hpp"
#include "leader/leader.hpp"
#include "support.hpp"

extern char** environ;

namespace {

using Clock = leader::bench::Clock;
using namespace std::chrono_literals;

const std::string kPrefix = "/leader-bench";

std::string endpoint() {
  return leader::bench::env_or("LEADER_BENCH_ETCD_ENDPOINT", "127.0.0.1:12379");
}
std::string uri() { return "etcd://" + endpoint() + "?prefix=" + kPrefix; }

using leader::bench::micros_since;
using leader::bench::report;
using leader::bench::soon;

[[maybe_unused]] const bool kStoreLoops = leader::bench::register_store_loops(uri, 10s);

// The raw operation: one compare-and-set Txn (If mod_revision == last Then Put) on one key.
void BM_RawTxn(benchmark::State& state) {
  leader::etcd::EtcdStore s(leader::etcd::Config::from_uri(leader::Uri::parse(uri())));
  namespace ops = leader::etcd::ops;
  const std::string key = kPrefix + "-raw/txn";
  auto r = s.gateway().call("/v3/kv/put", ops::put(key, "0", 0), soon());
  std::int64_t rev = leader::etcd::int_field(r["header"], "revision");
  leader::bench::timed_loop(state, "compare-and-set Txn", [&] {
    auto reply = s.gateway().call(
        "/v3/kv/txn",
        ops::txn(nlohmann::json::array({ops::mod_revision_is(key, rev)}),
                 nlohmann::json::array({{{"request_put", ops::put(key, "x", 0)}}})),
        soon());
    rev = leader::etcd::int_field(reply["header"], "revision");
    return reply.value("succeeded", false);
  });
}
BENCHMARK(BM_RawTxn)->UseRealTime();

// The store's acquire + release as raw gateway calls (LeaseGrant, Txn put-if-prefix-empty,
// LeaseRevoke), with the median of each phase, to show where the time goes.
void BM_RawLeaseCycle(benchmark::State& state) {
  leader::etcd::EtcdStore s(leader::etcd::Config::from_uri(leader::Uri::parse(uri())));
  namespace ops = leader::etcd::ops;
  using Json = nlohmann::json;
  const std::string prefix = kPrefix + "-raw/cycle/";
  std::vector<double> us, grant_us, txn_us, revoke_us;
  std::int64_t id = 1'000'000;
  for (auto _ : state) {
    auto t0 = Clock::now();
    ++id;
    (void)s.gateway().call("/v3/lease/grant", {{"TTL", "10"}, {"ID", std::to_string(id)}}, soon());
    grant_us.push_back(micros_since(t0));
    auto t1 = Clock::now();
    auto reply = s.gateway().call(
        "/v3/kv/txn",
        ops::txn(
            Json::array({ops::create_revision_is(prefix, 0, leader::etcd::prefix_end(prefix))}),
            Json::array(
                {{{"request_put", ops::put(prefix + leader::etcd::lease_hex(id), "x", id)}}})),
        soon());
    if (!reply.value("succeeded", false)) state.SkipWithError("contended");
    txn_us.push_back(micros_since(t1));
    auto t2 = Clock::now();
    (void)s.gateway().call("/v3/lease/revoke", {{"ID", std::to_string(id)}}, soon());
    revoke_us.push_back(micros_since(t2));
    us.push_back(micros_since(t0));
  }
  for (auto* v : {&grant_us, &txn_us, &revoke_us}) std::sort(v->begin(), v->end());
  if (!us.empty()) {
    state.counters["grant_p50_us"] = grant_us[grant_us.size() / 2];
    state.counters["txn_p50_us"] = txn_us[txn_us.size() / 2];
    state.counters["revoke_p50_us"] = revoke_us[revoke_us.size() / 2];
  }
  report(state, us);
}
BENCHMARK(BM_RawLeaseCycle)->UseRealTime();

// What an election needs now, as raw gateway calls on one lease granted before the loop: Txn
// put-if-prefix-empty attached to it, then Txn If(create_revision == rev) DeleteRange. The
// baseline of run_if_leader (bench/README.md, etcd).
void BM_RawSessionCycle(benchmark::State& state) {
  leader::etcd::EtcdStore s(leader::etcd::Config::from_uri(leader::Uri::parse(uri())));
  namespace ops = leader::etcd::ops;
  using Json = nlohmann::json;
  const std::string prefix = kPrefix + "-raw/session/";
  const std::string key = prefix + "0123456789abcde";
  auto granted = s.gateway().call("/v3/lease/grant", {{"TTL", "60"}}, soon());
  const std::int64_t lease = leader::etcd::int_field(granted, "ID");
  std::vector<double> us, put_us, delete_us;
  for (auto _ : state) {
    auto t0 = Clock::now();
    auto reply = s.gateway().call(
        "/v3/kv/txn",
        ops::txn(
            Json::array({ops::create_revision_is(prefix, 0, leader::etcd::prefix_end(prefix))}),
            Json::array(
                {{{"request_put", ops::put(key, R"({"node_id":"n","owner":"o"})", lease)}}}),
            Json::array({{{"request_range", ops::range_prefix(prefix, 1)}}})),
        soon());
    if (!reply.value("succeeded", false)) state.SkipWithError("contended");
    const std::int64_t rev = leader::etcd::int_field(reply["header"], "revision");
    put_us.push_back(micros_since(t0));
    auto t1 = Clock::now();
    (void)s.gateway().call(
        "/v3/kv/txn",
        ops::txn(Json::array({ops::create_revision_is(key, rev)}),
                 Json::array({{{"request_delete_range", ops::delete_key(key)}}})),
        soon());
    delete_us.push_back(micros_since(t1));
    us.push_back(micros_since(t0));
  }
  (void)s.gateway().post("/v3/lease/revoke", {{"ID", std::to_string(lease)}}, soon());
  for (auto* v : {&put_us, &delete_us}) std::sort(v->begin(), v->end());
  if (!us.empty()) {
    state.counters["put_p50_us"] = put_us[put_us.size() / 2];
    state.counters["delete_p50_us"] = delete_us[delete_us.size() / 2];
  }
  report(state, us);
}
BENCHMARK(BM_RawSessionCycle)->UseRealTime();

int spawn_wait(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t quiet;  // etcdctl put prints "OK"
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &quiet, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&quiet);
  if (rc != 0) return -1;
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void run_process(benchmark::State& state, const std::vector<std::string>& argv) {
  leader::bench::timed_loop(state, argv[0].c_str(), [&] { return spawn_wait(argv) == 0; });
}

void BM_EtcdctlLock(benchmark::State& state) {
  run_process(state, {"etcdctl", "--endpoints=http://" + endpoint(), "lock",
                      kPrefix + "/bench-etcdctl", "--", "true"});
}
BENCHMARK(BM_EtcdctlLock)->UseRealTime()->MinTime(3);

void BM_EtcdctlPut(benchmark::State& state) {
  run_process(
      state, {"etcdctl", "--endpoints=http://" + endpoint(), "put", kPrefix + "-raw/etcdctl", "x"});
}
BENCHMARK(BM_EtcdctlPut)->UseRealTime()->MinTime(3);

// `leader run` from the same build tree (<build>/tools/leader/leader), when it was built.
void BM_LeaderRunCli(benchmark::State& state) {
  auto cli = std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() / "tools" /
             "leader" / "leader";
  if (!std::filesystem::exists(cli)) {
    state.SkipWithError("tools/leader/leader not built");
    for (auto _ : state) {
    }
    return;
  }
  run_process(state, {cli.string(), "run", "--store", uri(), "--lock", "bench-cli", "--wait", "0s",
                      "--skip-exit-code", "3", "--", "true"});
}
BENCHMARK(BM_LeaderRunCli)->UseRealTime()->MinTime(3);

}  // namespace

BENCHMARK_MAIN();
