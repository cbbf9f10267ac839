// bench_waiting (issue 14, target 5; bench/README.md "waiting without a thread"): what WAITERS
// coroutines waiting for held locks cost the client, and how fast they are served once the
// holders let go. Another store object (as another process) holds LOCKS locks; WAITERS
// coroutines on one io_context thread co_await async_run_if_leader on them (waiter i on lock
// i % LOCKS, wait_time 120 s, an action that only records its start and end). After SETTLE_MS
// the program reads, over a quiet window of 3 s: its threads, its CPU time (getrusage, all
// threads) and its resident memory against before the waiters started; then the holders
// release and it times until every waiter ran, with the gap from one holder's end to the next
// one's start on each lock (the hand-over inside the drain).
// MODE `async`: the store as leader::open() gives it (Redis: its asynchronous attempts);
// `pool`: the same store behind a plain forwarding store (the elector sees no asynchronous
// attempts): each waiting operation holds a BlockingPool thread (at most 64; the rest queue),
// the baseline, measured in the same run by the README's command.
//   <scheme> mode=M waiters=N locks=L threads=T cpu_pct=C rss_b_per_waiter=R drain_ms=D
//   handover_p50_ms=A handover_p99_ms=B ran=K
//   bench_waiting URI WAITERS LOCKS SETTLE_MS MODE

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "forwarding_store.hpp"
#include "leader/asio/async_elector.hpp"
#include "leader/leader.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

int thread_count() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

long rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0;
  long resident = 0;
  statm >> pages >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return s(u.ru_utime) + s(u.ru_stime);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: bench_waiting URI WAITERS LOCKS SETTLE_MS async|pool\n";
    return 64;
  }
  const std::string uri = argv[1];
  const int waiters = std::stoi(argv[2]);
  const int locks = std::stoi(argv[3]);
  const std::chrono::milliseconds settle{std::stol(argv[4])};
  const std::string mode = argv[5];
  if (mode != "async" && mode != "pool") {
    std::cerr << "MODE must be async or pool, got '" << mode << "'\n";
    return 64;
  }
  try {
    auto holder_store = leader::open(uri);
    std::shared_ptr<leader::LeaseStore> waiter_store = leader::open(uri);
    if (mode == "pool")
      waiter_store = std::make_shared<leader::bench::ForwardingStore>(waiter_store);
    leader::ElectionOptions hold;
    hold.wait_time = 0s;
    hold.lease_time = 60s;
    leader::LeaderElector holder(holder_store, hold);
    const std::string prefix = "bench-waiting-" + std::to_string(::getpid()) + "-";
    std::vector<leader::LeaseGuard> held;
    for (int l = 0; l < locks; ++l) {
      auto acq = holder.acquire(prefix + std::to_string(l));
      if (!acq) throw std::runtime_error("the holder could not take its lock");
      held.push_back(std::move(*acq.guard));
    }
    leader::ElectionOptions wait;
    wait.wait_time = 120s;
    wait.lease_time = 10s;
    ::asio::io_context io;
    auto work = ::asio::make_work_guard(io);
    leader::asio::AsyncElector async(leader::LeaderElector(waiter_store, wait), io.get_executor());
    if (async.elector().acquires_async() != (mode == "async"))
      throw std::runtime_error("the elector " +
                               std::string(async.elector().acquires_async() ? "does" : "does not") +
                               " acquire asynchronously in mode " + mode);
    const int threads_before = thread_count();
    const long rss_before = rss_bytes();
    struct Run {
      Clock::time_point start;
      Clock::time_point end;
    };
    std::vector<std::vector<Run>> runs(static_cast<std::size_t>(locks));
    std::atomic<int> done{0};
    std::atomic<int> ran{0};
    std::thread loop([&] { io.run(); });
    for (int i = 0; i < waiters; ++i) {
      const int l = i % locks;
      ::asio::co_spawn(
          io,
          [&, l]() -> ::asio::awaitable<void> {
            const bool got = co_await async.async_run_if_leader(
                prefix + std::to_string(l),
                [&, l] {
                  Run r{Clock::now(), {}};
                  r.end = Clock::now();
                  runs[static_cast<std::size_t>(l)].push_back(r);  // actions run on `loop` only
                },
                ::asio::use_awaitable);
            if (got) ++ran;
            ++done;
          },
          ::asio::detached);
    }
    std::this_thread::sleep_for(settle);
    const double cpu_start = cpu_seconds();
    const auto window_start = Clock::now();
    std::this_thread::sleep_for(3s);
    const double cpu_used = cpu_seconds() - cpu_start;
    const double window = std::chrono::duration<double>(Clock::now() - window_start).count();
    const int threads = thread_count();
    const long rss = rss_bytes();
    const auto released = Clock::now();
    held.clear();  // every holder releases
    while (done.load() < waiters) std::this_thread::sleep_for(1ms);
    const auto drained = Clock::now();
    work.reset();
    loop.join();
    std::vector<double> gaps;
    for (auto& on_lock : runs) {
      std::sort(on_lock.begin(), on_lock.end(),
                [](const Run& a, const Run& b) { return a.start < b.start; });
      for (std::size_t k = 1; k < on_lock.size(); ++k)
        gaps.push_back(ms(on_lock[k].start - on_lock[k - 1].end));
    }
    std::printf(
        "%s mode=%s waiters=%d locks=%d threads=%d cpu_pct=%.2f rss_b_per_waiter=%.0f "
        "drain_ms=%.1f handover_p50_ms=%.3f handover_p99_ms=%.3f ran=%d\n",
        std::string(holder_store->scheme()).c_str(), mode.c_str(), waiters, locks,
        threads - threads_before, 100.0 * cpu_used / window,
        static_cast<double>(rss - rss_before) / waiters, ms(drained - released),
        percentile(gaps, 0.5), percentile(gaps, 0.99), ran.load());
    return ran.load() == waiters ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "bench_waiting: " << e.what() << "\n";
    return 1;
  }
}
