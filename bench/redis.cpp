// The Redis store's benchmarks (see bench/README.md, section redis):
//  - uncontended run_if_leader with a no-op action through LeaderElector, the same acquire +
//    release through the bare LeaseStore, and the baseline: the very same two EVALSHA commands
//    sent over one plain hiredis connection, measured in the same run; ops/s, p50/p99, and the
//    commands the server processed per operation (round trips);
//  - 64 threads contending for one lock: elections per second and server commands per election
//    (a thundering herd on wait would show as many commands per election);
//  - 10,000 leases held at once by one process with auto_extend: memory and CPU per lease,
//    connections used, renewals per second, and whether every lease survived.
//
//   LEADER_BENCH_REDIS_PORT=16379 build-redis/bench/bench_redis

#include "leader/stores/redis.hpp"

#include <benchmark/benchmark.h>
#include <hiredis/hiredis.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../src/stores/redis/scripts.hpp"
#include "leader/leader.hpp"
#include "support.hpp"

namespace {

using Clock = leader::bench::Clock;
using namespace std::chrono_literals;

int port() {
  const char* p = std::getenv("LEADER_BENCH_REDIS_PORT");
  return p != nullptr ? std::atoi(p) : 16379;
}
std::string uri(const std::string& query = "") {
  return "redis://127.0.0.1:" + std::to_string(port()) + query;
}

// A plain hiredis connection: the baseline client and the server statistics probe.
struct Raw {
  redisContext* c = redisConnect("127.0.0.1", port());
  ~Raw() { redisFree(c); }
  redisReply* argv(const std::vector<std::string>& args) {
    std::vector<const char*> a;
    std::vector<size_t> l;
    for (const auto& s : args) {
      a.push_back(s.data());
      l.push_back(s.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(c, static_cast<int>(a.size()), a.data(), l.data()));
    if (r == nullptr) throw std::runtime_error("hiredis: connection failed");
    return r;
  }
  long long info_field(const std::string& section, const std::string& field) {
    redisReply* r = argv({"INFO", section});
    std::string text(r->str, r->len);
    freeReplyObject(r);
    auto at = text.find(field);
    return at == std::string::npos ? -1 : std::atoll(text.c_str() + at + field.size());
  }
  // Top-level script calls (each one round trip); commands run inside scripts are not counted.
  long long commands() {
    return info_field("commandstats", "cmdstat_evalsha:calls=") +
           std::max(0LL, info_field("commandstats", "cmdstat_eval:calls="));
  }
  // Microseconds the server spent running scripts (EVALSHA and EVAL, INFO commandstats).
  long long script_usec() {
    redisReply* r = argv({"INFO", "commandstats"});
    const std::string text(r->str, r->len);
    freeReplyObject(r);
    long long total = 0;
    for (const char* command : {"cmdstat_evalsha:", "cmdstat_eval:"}) {
      const auto at = text.find(command);
      const auto usec = at == std::string::npos ? at : text.find(",usec=", at);
      if (usec != std::string::npos) total += std::atoll(text.c_str() + usec + 6);
    }
    return total;
  }
};

// What the server counted before an operation loop.
struct ServerCounts {
  long long calls = 0;
  long long usec = 0;
};
ServerCounts server_counts(Raw& probe) { return {probe.commands(), probe.script_usec()}; }

// Script calls (round trips) and server script time per operation.
void round_trips(benchmark::State& state, Raw& probe, ServerCounts before) {
  const ServerCounts after = server_counts(probe);
  if (state.iterations() == 0) return;
  const auto n = static_cast<double>(state.iterations());
  state.counters["cmds_per_op"] = static_cast<double>(after.calls - before.calls) / n;
  state.counters["server_us_per_op"] = static_cast<double>(after.usec - before.usec) / n;
}

void BM_ElectorRunIfLeader(benchmark::State& state) {
  leader::LeaderElector elector(leader::open(uri()), {.wait_time = 0s, .lease_time = 30s});
  const std::string lock = "bench-elector-" + std::to_string(getpid());
  (void)elector.run_if_leader(lock, [] {});  // warm: connection, scripts
  Raw probe;
  const ServerCounts before = server_counts(probe);
  leader::bench::timed_loop(state, "uncontended run_if_leader",
                            [&] { return static_cast<bool>(elector.run_if_leader(lock, [] {})); });
  round_trips(state, probe, before);
}

void BM_StoreAcquireRelease(benchmark::State& state) {
  auto store = leader::open(uri());
  leader::LeaseRequest req{"bench-store-" + std::to_string(getpid()), leader::new_owner_token(),
                           "bench-node", 30s, 0};
  auto deadline = [] { return leader::Deadline::after(5s); };
  Raw probe;
  const ServerCounts before = server_counts(probe);
  leader::bench::timed_loop(state, "uncontended acquire", [&] {
    auto got = store->try_acquire(req, deadline());
    if (!got) return false;
    (void)store->release(*got.lease, 0ms, deadline());
    return true;
  });
  round_trips(state, probe, before);
}

// The store's scripts with the PUBLISH that tells watchers (watch.cpp) taken out: the baseline
// of what that PUBLISH costs.
const leader::redis::Script& without_publish(const leader::redis::Script& s) {
  static std::map<std::string, leader::redis::Script> made;
  const std::string call = "redis.pcall('PUBLISH', channel, event .. ' ' .. key)";
  auto at = made.find(s.sha1);
  if (at != made.end()) return at->second;
  std::string source = s.source;
  const auto pos = source.find(call);
  if (pos == std::string::npos) throw std::runtime_error("the scripts' PUBLISH call changed");
  source.replace(pos, call.size(), "return");
  return made.emplace(s.sha1, leader::redis::Script(source)).first->second;
}

// The same EVALSHA acquire and release the store sends, over one hiredis connection; with
// `state.range(0) == 0` the scripts without their PUBLISH.
void BM_BaselineHiredisSameCommands(benchmark::State& state) {
  namespace rs = leader::redis;
  const bool publish = state.range(0) != 0;
  const rs::Script& acquire_script =
      publish ? rs::acquire_script() : without_publish(rs::acquire_script());
  const rs::Script& release_script =
      publish ? rs::release_script() : without_publish(rs::release_script());
  Raw raw;
  const std::string key = "leader:bench-raw-" + std::to_string(getpid());
  for (const auto* s : {&acquire_script, &release_script})
    freeReplyObject(raw.argv({"SCRIPT", "LOAD", s->source}));
  const std::string owner = leader::new_owner_token();
  const std::string channel = "{" + key + "}:changed";
  const std::vector<std::string> acquire = {"EVALSHA",
                                            acquire_script.sha1,
                                            "3",
                                            key,
                                            "{" + key + "}:fence",
                                            "{" + key + "}:slots",
                                            owner,
                                            "bench-node",
                                            "30000",
                                            "1",
                                            channel};
  const std::vector<std::string> release = {"EVALSHA", release_script.sha1, "1", key, owner, "0",
                                            channel};
  Raw probe;
  const ServerCounts before = server_counts(probe);
  leader::bench::timed_loop(state, publish ? "baseline acquire" : "baseline without publish", [&] {
    redisReply* a = raw.argv(acquire);
    const bool granted = a->type == REDIS_REPLY_ARRAY;
    freeReplyObject(a);
    freeReplyObject(raw.argv(release));
    return granted;
  });
  round_trips(state, probe, before);
}

// 64 threads run_if_leader on one lock for 3 s, each waiting up to 2 s for its turn.
void BM_Contended64Threads(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  auto store = leader::open(uri());
  leader::LeaderElector elector(store, {.wait_time = 2s, .lease_time = 10s});
  const std::string lock = "bench-contended-" + std::to_string(getpid());
  Raw probe;
  for (auto _ : state) {
    std::atomic<long> elected{0}, skipped{0};
    std::atomic<bool> stop{false};
    long long before = probe.commands();
    auto t0 = Clock::now();
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        while (!stop) (elector.run_if_leader(lock, [] {}) ? elected : skipped).fetch_add(1);
      });
    std::this_thread::sleep_for(3s);
    stop = true;
    for (auto& t : pool) t.join();
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    long long cmds = probe.commands() - before;
    state.counters["elections_per_s"] = static_cast<double>(elected) / seconds;
    state.counters["skipped"] = static_cast<double>(skipped);
    state.counters["cmds_per_election"] =
        static_cast<double>(cmds) / std::max(1.0, static_cast<double>(elected));
    state.counters["connections"] = leader::redis_pool_stats(*store).open_connections;
  }
}

long resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](timeval t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

// N leases held at once with auto_extend (lease 6 s: each renewed about every 2 s) for 12 s.
void BM_HeldLeasesAutoExtend(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  auto store = leader::open(uri());
  leader::LeaderElector elector(store, {.wait_time = 0s, .lease_time = 6s, .auto_extend = true});
  Raw probe;
  for (auto _ : state) {
    long rss0 = resident_bytes();
    long long server0 = probe.info_field("memory", "used_memory:");
    auto t0 = Clock::now();
    std::vector<leader::LeaseGuard> held;
    held.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      auto acq =
          elector.acquire("bench-held-" + std::to_string(getpid()) + "-" + std::to_string(i));
      if (!acq) throw std::runtime_error("acquire of a fresh lock failed");
      held.push_back(std::move(*acq.guard));
    }
    double acquire_s = std::chrono::duration<double>(Clock::now() - t0).count();
    long rss1 = resident_bytes();
    long long server1 = probe.info_field("memory", "used_memory:");
    double cpu0 = cpu_seconds();
    long long cmds0 = probe.commands();
    const double hold_s = 12;
    std::this_thread::sleep_for(std::chrono::duration<double>(hold_s));
    double cpu = cpu_seconds() - cpu0;
    long long cmds = probe.commands() - cmds0;
    int alive = 0;
    for (auto& g : held) alive += g.context().still_leader() ? 1 : 0;
    state.counters["acquire_per_s"] = n / acquire_s;
    state.counters["bytes_per_lease"] = static_cast<double>(rss1 - rss0) / n;
    state.counters["server_bytes_per_lease"] = static_cast<double>(server1 - server0) / n;
    state.counters["cpu_us_per_lease_s"] = cpu * 1e6 / (n * hold_s);
    state.counters["cpu_pct_of_core"] = cpu * 100 / hold_s;
    state.counters["renewals_per_s"] = static_cast<double>(cmds) / hold_s;
    state.counters["connections"] = leader::redis_pool_stats(*store).open_connections;
    state.counters["alive"] = alive;
    auto r0 = Clock::now();
    held.clear();
    state.counters["release_all_s"] = std::chrono::duration<double>(Clock::now() - r0).count();
  }
}

}  // namespace

BENCHMARK(BM_ElectorRunIfLeader)->MinTime(3)->UseRealTime();
BENCHMARK(BM_StoreAcquireRelease)->MinTime(3)->UseRealTime();
// Arg 1: the scripts as the store sends them; 0: without their PUBLISH (what it costs).
BENCHMARK(BM_BaselineHiredisSameCommands)->Arg(1)->Arg(0)->MinTime(3)->UseRealTime();
BENCHMARK(BM_Contended64Threads)->Arg(64)->Iterations(1)->UseRealTime()->Unit(benchmark::kSecond);
BENCHMARK(BM_HeldLeasesAutoExtend)
    ->Arg(10000)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);

BENCHMARK_MAIN();
