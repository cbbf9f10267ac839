// bench_fairness (issue 14, target 4; bench/README.md "fairness"): THREADS threads of one process
// contend for one lock on URI for SECONDS. Each thread loops: run_if_leader(lock) with
// wait_time WAIT_MS and an action that holds the lock HOLD_MS, then pauses PAUSE_MS (the time a
// replica spends on other work between rounds). One line per run:
//   <uri-scheme> threads=T runs=R skipped=S max_wait_ms=M p50_wait_ms=P p99_wait_ms=Q
//   starved=K min_runs=A max_runs=B jain=J
// runs: elections won (all threads); skipped: calls that gave up at their wait_time (the lock was
// held throughout, while others acquired it again); wait: from the call to the action's start
// (elected calls only); starved: threads that never ran; min/max_runs: per thread; jain: Jain's
// fairness index of the per-thread runs (1 = equal shares, 1/T = one thread ran everything).
// MODE (optional): `fair` (the default, ElectionOptions::fair) or `unfair` (each caller polls on
// its own with backoff: the behaviour before issue 14's fair waiting), printed as mode=. With
// the suffix `-stores` (`fair-stores`, `unfair-stores`) each thread opens a store object of its
// own (its own connections or sessions, its own in-process wait queue): the threads then contend
// as separate processes do, and only the store's own order can make them FIFO (ZooKeeper's line).
//   bench_fairness URI THREADS SECONDS WAIT_MS HOLD_MS PAUSE_MS LOCK [fair|unfair][-stores]

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "leader/leader.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

struct Totals {
  std::mutex mu;
  std::vector<double> waits_ms;  // elected calls
  std::vector<long> runs;        // per thread
  long skipped = 0;
  long errors = 0;
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8 && argc != 9) {
    std::cerr << "usage: bench_fairness URI THREADS SECONDS WAIT_MS HOLD_MS PAUSE_MS LOCK "
                 "[fair|unfair][-stores]\n";
    return 64;
  }
  const std::string uri = argv[1];
  const int threads = std::stoi(argv[2]);
  const double seconds = std::stod(argv[3]);
  const Ms wait{std::stol(argv[4])}, hold{std::stol(argv[5])}, pause{std::stol(argv[6])};
  const std::string lock = argv[7];
  const std::string mode = argc == 9 ? argv[8] : "fair";
  const bool per_thread = mode.ends_with("-stores");
  const std::string waiting = per_thread ? mode.substr(0, mode.size() - 7) : mode;
  if (waiting != "fair" && waiting != "unfair") {
    std::cerr << "MODE must be fair, unfair, fair-stores or unfair-stores, got '" << mode << "'\n";
    return 64;
  }
  const bool fair = waiting == "fair";
  auto store = leader::open(uri);
  std::vector<std::shared_ptr<leader::LeaseStore>> stores;  // -stores: one per thread
  for (int t = 0; per_thread && t < threads; ++t) stores.push_back(leader::open(uri));
  Totals totals;
  totals.runs.assign(static_cast<std::size_t>(threads), 0);
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      leader::ElectionOptions o;
      o.wait_time = wait;
      o.fair = fair;
      o.lease_time = std::max(Ms{2000}, hold * 10);
      o.node_id = "fair-" + std::to_string(t);
      leader::LeaderElector elector(per_thread ? stores[static_cast<std::size_t>(t)] : store, o);
      std::vector<double> waits;
      long runs = 0, skipped = 0, errors = 0;
      while (Clock::now() < end) {
        const auto called = Clock::now();
        Clock::time_point started{};
        try {
          auto r = elector.run_if_leader(lock, [&](leader::LeaderContext&) {
            started = Clock::now();
            std::this_thread::sleep_for(hold);
            return 0;
          });
          if (r) {
            ++runs;
            waits.push_back(std::chrono::duration<double, std::milli>(started - called).count());
          } else {
            ++skipped;
          }
        } catch (const std::exception&) {
          ++errors;
        }
        std::this_thread::sleep_for(pause);
      }
      std::lock_guard l(totals.mu);
      totals.runs[static_cast<std::size_t>(t)] = runs;
      totals.skipped += skipped;
      totals.errors += errors;
      totals.waits_ms.insert(totals.waits_ms.end(), waits.begin(), waits.end());
    });
  }
  for (auto& th : pool) th.join();
  long all = 0, lo = totals.runs.empty() ? 0 : totals.runs[0], hi = 0, starved = 0;
  double sq = 0;
  for (long r : totals.runs) {
    all += r;
    lo = std::min(lo, r);
    hi = std::max(hi, r);
    starved += r == 0 ? 1 : 0;
    sq += static_cast<double>(r) * static_cast<double>(r);
  }
  const double jain =
      sq > 0 ? static_cast<double>(all) * static_cast<double>(all) / (threads * sq) : 0;
  const double max_wait = totals.waits_ms.empty()
                              ? 0
                              : *std::max_element(totals.waits_ms.begin(), totals.waits_ms.end());
  std::printf(
      "%s mode=%s threads=%d runs=%ld skipped=%ld errors=%ld max_wait_ms=%.1f p50_wait_ms=%.1f "
      "p99_wait_ms=%.1f starved=%ld min_runs=%ld max_runs=%ld jain=%.3f\n",
      std::string(store->scheme()).c_str(), mode.c_str(), threads, all, totals.skipped,
      totals.errors, max_wait, percentile(totals.waits_ms, 0.5), percentile(totals.waits_ms, 0.99),
      starved, lo, hi, jain);
  return 0;
}
