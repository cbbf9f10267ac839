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
#include <vector>

#include "k8s/k8s_store.hpp"
#include "leader/leader.hpp"
#include "support.hpp"

namespace {

using leader::bench::soon;
using namespace std::chrono_literals;

std::string uri() {
  return leader::bench::env_or("LEADER_BENCH_K8S_URI",
                               "k8s://127.0.0.1:16443?tls=false&namespace=bench");
}

leader::k8s::K8sStore raw_store() {
  return leader::k8s::K8sStore(leader::k8s::Config::from_uri(leader::Uri::parse(uri())));
}

[[maybe_unused]] const bool kStoreLoops = leader::bench::register_store_loops(uri, 10s);

// The raw unit: one PUT conditional on the resourceVersion of the previous reply.
void BM_RawConditionalPut(benchmark::State& state) {
  auto s = raw_store();
  const std::string name = "bench-raw-put";
  auto r = s.api().get(name, soon());
  nlohmann::json obj = r.ok() ? r.body
                              : nlohmann::json{{"apiVersion", "coordination.k8s.io/v1"},
                                               {"kind", "Lease"},
                                               {"metadata", {{"name", name}}},
                                               {"spec", {{"leaseDurationSeconds", 10}}}};
  if (!r.ok()) obj = s.api().create(obj, soon()).body;
  long n = 0;
  leader::bench::timed_loop(state, "conditional PUT", [&] {
    obj["spec"]["holderIdentity"] = "bench-" + std::to_string(++n);
    auto w = s.api().replace(name, obj, soon());
    obj = w.body;
    return w.ok();
  });
}
BENCHMARK(BM_RawConditionalPut)->UseRealTime();

void BM_RawGet(benchmark::State& state) {
  auto s = raw_store();
  leader::bench::timed_loop(state, "GET", [&] {
    (void)s.api().get("bench-raw-put", soon());
    return true;
  });
}
BENCHMARK(BM_RawGet)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
