// The Consul store's benchmarks (bench/README.md, section consul), all against the Consul HTTP API
// DOUBLE (tests/doubles/consul, a Python process), never against a real Consul: the absolute
// figures measure the double as much as the store; only the ratios to the raw rows, measured in
// the same run over the same connection pool, say something about the store.
//  - uncontended run_if_leader with a no-op action through LeaderElector;
//  - the same acquire + release through the bare LeaseStore, a renew, a contended try_acquire;
//  - raw baselines over the store's own API client: what `api.Lock` does for one lock
//    (session create, ?acquire, ?release, session destroy), and a single KV GET.
//
//   LEADER_BENCH_CONSUL=127.0.0.1:18500 build/bench/bench_consul

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "consul/consul_store.hpp"
#include "latency.hpp"
#include "leader/leader.hpp"

namespace {

using Clock = leader::bench::Clock;
using leader::bench::micros_since;
using leader::bench::report;
using namespace std::chrono_literals;

std::string agent() {
  const char* e = std::getenv("LEADER_BENCH_CONSUL");
  return e != nullptr ? e : "127.0.0.1:18500";
}
std::string uri() { return "consul://" + agent() + "?prefix=leader-bench&session_ttl_min=100ms"; }
leader::Deadline soon() { return leader::Deadline::after(5s); }

// renew()'s status before (LeaseStatus) and after (Renewal) the kit's interface change.
template <class Result>
leader::LeaseStatus status_of(const Result& r) {
  if constexpr (std::is_same_v<Result, leader::LeaseStatus>) {
    return r;
  } else {
    return r.status;
  }
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
  const std::string lock = "bench-renew-" + std::to_string(::getpid());
  auto held = s->try_acquire({lock, leader::new_owner_token(), "bench", 10s, 0}, soon());
  if (!held) return state.SkipWithError("not acquired");
  leader::Lease lease = *held.lease;
  std::vector<double> us;
  for (auto _ : state) {
    auto t0 = Clock::now();
    if (status_of(s->renew(lease, 10s, soon())) != leader::LeaseStatus::ok)
      state.SkipWithError("renew lost");
    us.push_back(micros_since(t0));
  }
  (void)s->release(*held.lease, 0ms, soon());
  report(state, us);
}
BENCHMARK(BM_StoreRenew)->UseRealTime();

void BM_StoreContendedSkip(benchmark::State& state) {
  auto s = leader::open(uri());
  const std::string lock = "bench-contended-" + std::to_string(::getpid());
  auto held = s->try_acquire({lock, leader::new_owner_token(), "holder", 60s, 0}, soon());
  std::vector<double> us;
  for (auto _ : state) {
    auto t0 = Clock::now();
    if (s->try_acquire({lock, leader::new_owner_token(), "bench", 10s, 0}, soon()))
      state.SkipWithError("not contended");
    us.push_back(micros_since(t0));
  }
  if (held) (void)s->release(*held.lease, 0ms, soon());
  report(state, us);
}
BENCHMARK(BM_StoreContendedSkip)->UseRealTime();

// Baseline: one lock cycle as the Go api.Lock does it (no fence, no read-back).
void BM_RawLockCycle(benchmark::State& state) {
  leader::consul::ConsulStore s(leader::consul::Config::from_uri(leader::Uri::parse(uri())));
  auto& api = s.api();
  const std::string key = "leader-bench/raw-" + std::to_string(::getpid()) + "/.lock";
  std::vector<double> us;
  for (auto _ : state) {
    auto t0 = Clock::now();
    const std::string sid = api.create_session({"bench", 10s, 0ms, false}, soon());
    auto r =
        api.txn(nlohmann::json::array({leader::consul::kv_op("lock", key, "", 0, 0, sid)}), soon());
    if (!r.committed) state.SkipWithError("raw acquire refused");
    (void)api.release(key, sid, 0, "", soon());
    api.destroy_session(sid, soon());
    us.push_back(micros_since(t0));
  }
  report(state, us);
}
BENCHMARK(BM_RawLockCycle)->UseRealTime();

// Baseline: one KV read, the cheapest request (the double's and the transport's floor).
void BM_RawGet(benchmark::State& state) {
  leader::consul::ConsulStore s(leader::consul::Config::from_uri(leader::Uri::parse(uri())));
  std::vector<double> us;
  for (auto _ : state) {
    auto t0 = Clock::now();
    (void)s.api().get("leader-bench/absent", soon());
    us.push_back(micros_since(t0));
  }
  report(state, us);
}
BENCHMARK(BM_RawGet)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
