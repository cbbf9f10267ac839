// bench_held_leases (issue 14, target 1; bench/README.md "held leases"): one process holds N
// auto-extended leases of LEASE_S seconds on URI for HOLD_S seconds and reports what keeping
// them costs the client. MODE `batched`: the store as leader::open() gives it (renewals due
// together go out in one renew_batch call); `single`: the same store behind a wrapper that hides
// its renew_batch, so every lease is renewed by its own renew() call (one round trip each): the
// baseline, measured in the same run. One line per run:
//   <scheme> mode=M leases=N lease_s=L acquire_per_s=A rss_bytes_per_lease=B cpu_pct_of_core=C
//   cpu_us_per_renewal=U renewals_per_s=R store_calls_per_s=K sockets=S connections=T alive=V
//   release_all_s=T rss_end_bytes_per_lease=E heap_end_bytes_per_lease=H
// rss_bytes_per_lease: resident memory grown while acquiring, per lease; rss_end: grown from
// before the first acquisition to the end of the hold, per lease (the steady state: every lease
// renewed at least once when HOLD_S >= LEASE_S / 3, so state a store adds at a lease's first
// renewal, such as ZooKeeper's renewal watches, is in it); heap_end: the same for the bytes
// malloc has handed out and not taken back (mallinfo2: every arena, with malloc's per-chunk
// overhead; not pages kept for reuse); cpu_late: cpu over the hold's second half only;
// cpu: the whole process
// (every thread: timers, renewal workers, client libraries' own threads) while holding;
// renewals: leases renewed (confirmed or not); store_calls: renew + renew_batch calls (round
// trips, but a store may split a large batch into chunks); sockets: open socket descriptors
// (libcurl keeps a socketpair per handle: two of them are not connections); connections: the
// sockets among them that are established TCP connections (/proc/self/net/tcp and tcp6).
//   bench_held_leases URI N LEASE_S HOLD_S MODE

#include <dirent.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "forwarding_store.hpp"
#include "leader/leader.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

long resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0;
  long resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

/// Bytes malloc has handed out and not taken back, over every arena and mmapped chunk.
long heap_bytes() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<long>(m.uordblks + m.hblkhd);
}

/// The inodes of the sockets this process has open ("socket:[inode]" links in /proc/self/fd).
std::set<std::string> socket_inodes() {
  std::set<std::string> inodes;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return inodes;
  while (dirent* e = readdir(d)) {
    char target[64] = {};
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    const auto len = readlink(path.c_str(), target, sizeof target - 1);
    const std::string link(target, len > 0 ? static_cast<std::size_t>(len) : 0);
    if (link.starts_with("socket:[") && link.ends_with("]"))
      inodes.insert(link.substr(8, link.size() - 9));
  }
  closedir(d);
  return inodes;
}

/// How many of `inodes` are established TCP connections (state 01 in /proc/self/net/tcp{,6}).
int established(const std::set<std::string>& inodes) {
  int n = 0;
  for (const char* table : {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream row(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      row >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >>
          inode;
      if (state == "01" && inodes.contains(inode)) ++n;
    }
  }
  return n;
}

/// Counts renewals and store calls; in `single` mode hides the store's renew_batch (the default
/// LeaseStore::renew_batch then calls renew() once per lease).
class Counting final : public leader::bench::ForwardingStore {
 public:
  Counting(std::shared_ptr<leader::LeaseStore> inner, bool batched)
      : ForwardingStore(std::move(inner)), batched_(batched) {}
  leader::Renewal renew(const leader::Lease& l, leader::Duration ttl, leader::Deadline d) override {
    calls.fetch_add(1, std::memory_order_relaxed);
    renewals.fetch_add(1, std::memory_order_relaxed);
    return inner().renew(l, ttl, d);
  }
  std::vector<leader::BatchRenewal> renew_batch(std::span<const leader::RenewalRequest> requests,
                                                leader::Deadline d) override {
    if (!batched_) return LeaseStore::renew_batch(requests, d);
    calls.fetch_add(1, std::memory_order_relaxed);
    renewals.fetch_add(static_cast<long>(requests.size()), std::memory_order_relaxed);
    return inner().renew_batch(requests, d);
  }

  std::atomic<long> calls{0};
  std::atomic<long> renewals{0};

 private:
  bool batched_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::cerr << "usage: bench_held_leases URI N LEASE_S HOLD_S batched|single\n";
    return 64;
  }
  const std::string uri = argv[1];
  const int n = std::stoi(argv[2]);
  const double lease_s = std::stod(argv[3]);
  const double hold_s = std::stod(argv[4]);
  const std::string mode = argv[5];
  if (mode != "batched" && mode != "single") {
    std::cerr << "MODE must be batched or single, got '" << mode << "'\n";
    return 64;
  }
  try {
    auto counting = std::make_shared<Counting>(leader::open(uri), mode == "batched");
    const auto lease =
        std::chrono::duration_cast<leader::Duration>(std::chrono::duration<double>(lease_s));
    leader::LeaderElector elector(
        counting, {.wait_time = leader::Duration{0}, .lease_time = lease, .auto_extend = true});
    const std::string prefix = "bench-held-" + std::to_string(getpid()) + "-";
    std::vector<leader::LeaseGuard> held;
    held.reserve(static_cast<std::size_t>(n));
    const long rss0 = resident_bytes();
    const long heap0 = heap_bytes();
    const auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      auto got = elector.acquire(prefix + std::to_string(i));
      if (!got.guard) {
        std::cerr << "acquire of fresh lock " << i << " failed\n";
        return 1;
      }
      held.push_back(std::move(*got.guard));
    }
    const double acquire_s = std::chrono::duration<double>(Clock::now() - t0).count();
    const long rss1 = resident_bytes();
    const long calls0 = counting->calls.load();
    const long renewals0 = counting->renewals.load();
    const double cpu0 = cpu_seconds();
    const auto h0 = Clock::now();
    // The hold's second half alone too: a store that does more at a lease's first renewal than
    // at later ones (ZooKeeper arms a watch per node) shows its steady state there.
    std::this_thread::sleep_for(std::chrono::duration<double>(hold_s / 2));
    const double cpu_half = cpu_seconds();
    const auto h_half = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(hold_s / 2));
    const double cpu = cpu_seconds() - cpu0;
    const double cpu_late = cpu_seconds() - cpu_half;
    const double late_s = std::chrono::duration<double>(Clock::now() - h_half).count();
    const double held_s = std::chrono::duration<double>(Clock::now() - h0).count();
    const long calls = counting->calls.load() - calls0;
    const long renewals = counting->renewals.load() - renewals0;
    const long rss2 = resident_bytes();
    const long heap2 = heap_bytes();
    const auto inodes = socket_inodes();
    const int sockets = static_cast<int>(inodes.size());
    const int connections = established(inodes);
    int alive = 0;
    for (auto& g : held) alive += g.context().still_leader() ? 1 : 0;
    const auto r0 = Clock::now();
    held.clear();
    const double release_s = std::chrono::duration<double>(Clock::now() - r0).count();
    std::printf(
        "%s mode=%s leases=%d lease_s=%g acquire_per_s=%.0f rss_bytes_per_lease=%.0f "
        "cpu_pct_of_core=%.3f cpu_us_per_renewal=%.2f renewals_per_s=%.0f store_calls_per_s=%.1f "
        "sockets=%d connections=%d alive=%d release_all_s=%.1f rss_end_bytes_per_lease=%.0f "
        "heap_end_bytes_per_lease=%.0f cpu_late_pct_of_core=%.3f\n",
        std::string(counting->scheme()).c_str(), mode.c_str(), n, lease_s, n / acquire_s,
        static_cast<double>(rss1 - rss0) / n, cpu * 100 / held_s,
        renewals > 0 ? cpu * 1e6 / static_cast<double>(renewals) : 0.0,
        static_cast<double>(renewals) / held_s, static_cast<double>(calls) / held_s, sockets,
        connections, alive, release_s, static_cast<double>(rss2 - rss0) / n,
        static_cast<double>(heap2 - heap0) / n, cpu_late * 100 / late_s);
    return alive == n ? 0 : 2;
  } catch (const std::exception& e) {
    std::cerr << "bench_held_leases: " << e.what() << "\n";
    return 1;
  }
}
