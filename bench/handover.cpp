// bench_handover (issue 14, target 3; bench/README.md "hand-over"): how long after a holder's
// release a waiting replica starts its action. ROUNDS times: a holder takes the lock, a waiter
// calls run_if_leader (wait_time 30 s), the holder keeps the lock HOLD_MS (so the waiter's
// backoff has grown) and releases; the latency is from the start of the release call to the
// start of the waiter's action. MODE `shared`: holder and waiter share one store object (threads
// of one process: the waiter is queued behind nobody and woken by the release, wait_queue.hpp);
// `separate`: each has its own leader::open() of URI, as two processes would (the waiter watches
// the lock where the store can, lock_watching.hpp); `polling`: separate, and the waiter's store
// hidden behind a plain forwarding store (no watch): the backoff polling of every store before
// issue 14, the baseline.
// Also measured in the same run: the round trip of one uncontended try_acquire + release pair
// (the `rtt`), so the target (p50 <= 1 round trip + 5 ms) reads off one line:
//   <scheme> mode=M rounds=R hold_ms=H p50_ms=A p99_ms=B max_ms=C rtt_ms=D
//   bench_handover URI ROUNDS HOLD_MS MODE

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "forwarding_store.hpp"
#include "leader/leader.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: bench_handover URI ROUNDS HOLD_MS shared|separate|polling\n";
    return 64;
  }
  const std::string uri = argv[1];
  const int rounds = std::stoi(argv[2]);
  const std::chrono::milliseconds hold{std::stol(argv[3])};
  const std::string mode = argv[4];
  if (mode != "shared" && mode != "separate" && mode != "polling") {
    std::cerr << "MODE must be shared, separate or polling, got '" << mode << "'\n";
    return 64;
  }
  try {
    auto holder_store = leader::open(uri);
    std::shared_ptr<leader::LeaseStore> waiter_store = holder_store;
    if (mode == "separate") waiter_store = leader::open(uri);
    if (mode == "polling")
      waiter_store = std::make_shared<leader::bench::ForwardingStore>(leader::open(uri));
    const std::string lock = "bench-handover-" + std::to_string(getpid());
    leader::ElectionOptions ho;
    ho.wait_time = leader::Duration{0};
    ho.lease_time = std::chrono::seconds(30);
    leader::ElectionOptions wo = ho;
    wo.wait_time = std::chrono::seconds(30);
    leader::LeaderElector holder(holder_store, ho);
    leader::LeaderElector waiter(waiter_store, wo);
    // The round trip of an uncontended acquire + release, measured on the same store.
    std::vector<double> rtts;
    for (int i = 0; i < 50; ++i) {
      const auto t0 = Clock::now();
      auto g = holder.acquire(lock + "-rtt");
      if (!g.guard) throw std::runtime_error("uncontended acquire failed");
      g.guard->release();
      rtts.push_back(ms(Clock::now() - t0) / 2);
    }
    std::vector<double> lat;
    for (int r = 0; r < rounds; ++r) {
      auto held = holder.acquire(lock);
      if (!held.guard) throw std::runtime_error("the holder could not take the lock");
      std::promise<Clock::time_point> started;
      auto started_at = started.get_future();
      std::thread t([&] {
        auto res = waiter.run_if_leader(lock, [&] { started.set_value(Clock::now()); });
        if (!res) started.set_value(Clock::time_point::max());
      });
      std::this_thread::sleep_for(hold);
      const auto released = Clock::now();
      held.guard->release();
      const auto at = started_at.get();
      t.join();
      if (at == Clock::time_point::max()) throw std::runtime_error("the waiter was not elected");
      lat.push_back(ms(at - released));
    }
    std::printf(
        "%s mode=%s rounds=%d hold_ms=%ld p50_ms=%.2f p99_ms=%.2f max_ms=%.2f rtt_ms=%.3f\n",
        std::string(holder_store->scheme()).c_str(), mode.c_str(), rounds,
        static_cast<long>(hold.count()), percentile(lat, 0.5), percentile(lat, 0.99),
        *std::max_element(lat.begin(), lat.end()), percentile(rtts, 0.5));
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench_handover: " << e.what() << "\n";
    return 1;
  }
}
