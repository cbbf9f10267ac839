// The Kubernetes Lease store's benchmarks against the API DOUBLE (tests/doubles/k8s, a Python
// http.server), not a real kube-apiserver: the figures measure this store's request pattern and
// overhead over a stand-in, not Kubernetes (see bench/README.md, section k8s). All rows against
// the same double in the same run:
//  - uncontended run_if_leader with a no-op action (GET + PUT + LIST, then PUT);
//  - the same acquire + release on the bare LeaseStore; a renewal (one PUT); a contended attempt;
//  - the raw baselines over the store's own API client: one conditional PUT (the unit every
//    transition is made of) and one GET.
//
//   LEADER_BENCH_K8S_URI='k8s://127.0.0.1:16443?tls=false&namespace=bench' build/bench/bench_k8s

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "k8s/k8s_store.hpp"
#include "latency.hpp"
#include "leader/leader.hpp"

namespace {

using Clock = leader::bench::Clock;
using leader::bench::micros_since;
using leader::bench::report;
using namespace std::chrono_literals;

std::string uri() {
  const char* e = std::getenv("LEADER_BENCH_K8S_URI");
  return e != nullptr ? e : "k8s://127.0.0.1:16443?tls=false&namespace=bench";
}

leader::k8s::K8sStore raw_store() {
  return leader::k8s::K8sStore(leader::k8s::Config::from_uri(leader::Uri::parse(uri())));
}

// renew() returns a LeaseStatus or (after the kit's interface change) a Renewal.
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
  auto held = s->try_acquire({"bench-renew", leader::new_owner_token(), "bench", 10s, 0},
                             leader::Deadline::after(5s));
  if (!held) {
    state.SkipWithError("not acquired");
    return;
  }
  std::vector<double> us;
  for (auto _ : state) {
    auto t0 = Clock::now();
    leader::Lease l = *held.lease;
    if (status_of(s->renew(l, 10s, leader::Deadline::after(5s))) != leader::LeaseStatus::ok)
      state.SkipWithError("renew lost");
    us.push_back(micros_since(t0));
  }
  (void)s->release(*held.lease, 0ms, leader::Deadline::after(5s));
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

// The raw unit: one PUT conditional on the resourceVersion of the previous reply.
void BM_RawConditionalPut(benchmark::State& state) {
  auto s = raw_store();
  const std::string name = "bench-raw-put";
  auto r = s.api().get(name, leader::Deadline::after(5s));
  nlohmann::json obj = r.ok() ? r.body
                              : nlohmann::json{{"apiVersion", "coordination.k8s.io/v1"},
                                               {"kind", "Lease"},
                                               {"metadata", {{"name", name}}},
                                               {"spec", {{"leaseDurationSeconds", 10}}}};
  if (!r.ok()) obj = s.api().create(obj, leader::Deadline::after(5s)).body;
  std::vector<double> us;
  long n = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    obj["spec"]["holderIdentity"] = "bench-" + std::to_string(++n);
    auto w = s.api().replace(name, obj, leader::Deadline::after(5s));
    if (!w.ok()) state.SkipWithError("conditional PUT failed");
    obj = w.body;
    us.push_back(micros_since(t0));
  }
  report(state, us);
}
BENCHMARK(BM_RawConditionalPut)->UseRealTime();

void BM_RawGet(benchmark::State& state) {
  auto s = raw_store();
  std::vector<double> us;
  for (auto _ : state) {
    auto t0 = Clock::now();
    (void)s.api().get("bench-raw-put", leader::Deadline::after(5s));
    us.push_back(micros_since(t0));
  }
  report(state, us);
}
BENCHMARK(BM_RawGet)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
