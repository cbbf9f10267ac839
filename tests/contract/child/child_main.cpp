// leader_contract_child: a separate process for multi-process contract cases and the fault suite.
//   contend --uri U --lock L --rounds R --hold-ms H --lease-ms T --wait-ms W --ledger F --counter F
//       R times run_if_leader; the action reads the counter file, sleeps H, writes counter+1 and
//       appends "token start_ns end_ns pid" (CLOCK_MONOTONIC) to the ledger. Prints "RUNS n".
//   try --uri U --lock L --lease-ms T --hold-ms H
//       one try_acquire on the store: prints "ACQUIRED <token> <wall_s>" or "SKIPPED <wall_s>"
//       (wall_s: this process's wall clock, which libfaketime may shift); after holding H ms
//       releases and prints "RELEASED ok|lost" (H < 0: holds until killed).
//   hold --uri U --lock L --lease-ms T [--auto-extend] [--slots N]
//       acquires (waiting up to 30 s), prints "HELD <token> <slot>", then sleeps until killed.
//   judged-hold --uri U --lock L --lease-ms T --margin-ms M [--clock-rate R]
//       acquires with auto_extend through a store whose renewals all fail (tests/support
//       FaultyStore), prints "HELD <true_ns> <clock_ns>" and, when the stop_token fires,
//       "STOP <true_ns> <clock_ns>", then sleeps until killed. true_ns is CLOCK_MONOTONIC read by a
//       raw syscall (never faked), clock_ns the steady clock the library sees: with --clock-rate R
//       a ScaledClock running at R (libfaketime cannot scale CLOCK_MONOTONIC usably: timed waits
//       ignore it), so the parent judges with the first and checks the fault with the second.

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <map>
#include <string>
#include <thread>

#include "faulty_store.hpp"
#include "leader/leader.hpp"
#include "scaled_clock.hpp"

namespace {

std::int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// CLOCK_MONOTONIC through the raw syscall: libfaketime intercepts clock_gettime, not syscall.
std::int64_t true_ns() {
  timespec ts{};
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// "<true_ns> <clock_ns>": the real monotonic time and the library's (maybe scaled) clock.
std::string both_clocks(const leader::Clock& clock) {
  auto seen = std::chrono::duration_cast<std::chrono::nanoseconds>(clock.now().time_since_epoch());
  return std::to_string(true_ns()) + " " + std::to_string(seen.count());
}

/// judged-hold: see the file comment.
int judged_hold(std::shared_ptr<leader::LeaseStore> inner, leader::ElectionOptions o,
                const std::string& lock, double rate) {
  leader::ElectorHooks hooks;
  hooks.clock =
      rate > 0 ? std::shared_ptr<leader::Clock>(std::make_shared<leader::test::ScaledClock>(rate))
               : leader::Clock::system();
  const leader::Clock& clock = *hooks.clock;
  auto store = std::make_shared<leader::test::FaultyStore>(std::move(inner));
  store->fail_renew = true;
  o.auto_extend = true;
  o.wait_time = std::chrono::seconds(30);
  leader::LeaderElector(store, o, hooks).run_if_leader(lock, [&](leader::LeaderContext& ctx) {
    std::cout << "HELD " << both_clocks(clock) << std::endl;
    std::stop_callback on_stop(ctx.stop_token(),
                               [&] { std::cout << "STOP " << both_clocks(clock) << std::endl; });
    while (true) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  });
  std::cout << "SKIPPED" << std::endl;
  return 1;
}

/// try: see the file comment.
int try_once(leader::LeaseStore& store, const std::string& lock, leader::Duration ttl, long hold) {
  const auto deadline = [] { return leader::Deadline::after(std::chrono::seconds(5)); };
  auto got = store.try_acquire({lock, leader::new_owner_token(), "child", ttl, 0}, deadline());
  const long long wall = static_cast<long long>(std::time(nullptr));
  if (!got) {
    std::cout << "SKIPPED " << wall << std::endl;
    return 0;
  }
  std::cout << "ACQUIRED " << got.lease->fencing_token << " " << wall << std::endl;
  if (hold < 0)
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(hold));
  const auto status = store.release(*got.lease, leader::Duration{0}, deadline());
  std::cout << "RELEASED " << (status == leader::LeaseStatus::ok ? "ok" : "lost") << std::endl;
  return 0;
}

long read_counter(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return 0;
  long v = 0;
  if (std::fscanf(f, "%ld", &v) != 1) v = 0;
  std::fclose(f);
  return v;
}

void write_counter(const std::string& path, long v) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return;
  std::fprintf(f, "%ld\n", v);
  std::fflush(f);
  fsync(fileno(f));
  std::fclose(f);
}

void append_line(const std::string& path, const std::string& line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) return;
  auto n = ::write(fd, line.data(), line.size());
  (void)n;
  ::close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: leader_contract_child contend|try|hold|judged-hold --uri U --lock L ...\n";
    return 64;
  }
  std::string mode = argv[1];
  std::map<std::string, std::string> a;
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--auto-extend") {
      a[k] = "1";
    } else if (i + 1 < argc) {
      a[k] = argv[++i];
    }
  }
  auto num = [&](const std::string& k, long d) { return a.count(k) ? std::stol(a[k]) : d; };
  try {
    auto store = leader::open(a.at("--uri"));
    leader::ElectionOptions o;
    o.lease_time = std::chrono::milliseconds(num("--lease-ms", 2000));
    o.wait_time = std::chrono::milliseconds(num("--wait-ms", 0));
    o.auto_extend = a.count("--auto-extend") > 0;
    o.node_id = "child-" + std::to_string(getpid());
    if (mode == "contend") {
      leader::LeaderElector elector(store, o);
      long runs = 0;
      const auto hold = std::chrono::milliseconds(num("--hold-ms", 20));
      for (long r = 0; r < num("--rounds", 10); ++r) {
        elector.run_if_leader(a.at("--lock"), [&](leader::LeaderContext& ctx) {
          auto start = mono_ns();
          long c = read_counter(a.at("--counter"));
          std::this_thread::sleep_for(hold);
          write_counter(a.at("--counter"), c + 1);
          auto end = mono_ns();
          append_line(a.at("--ledger"), std::to_string(ctx.fencing_token()) + " " +
                                            std::to_string(start) + " " + std::to_string(end) +
                                            " " + std::to_string(getpid()) + "\n");
          ++runs;
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(1 + (getpid() + r) % 7));
      }
      std::cout << "RUNS " << runs << std::endl;
      return 0;
    }
    if (mode == "try") return try_once(*store, a.at("--lock"), o.lease_time, num("--hold-ms", 0));
    if (mode == "judged-hold") {
      o.safety_margin = std::chrono::milliseconds(num("--margin-ms", 0));
      const double rate = a.count("--clock-rate") ? std::stod(a["--clock-rate"]) : 0.0;
      return judged_hold(store, o, a.at("--lock"), rate);
    }
    if (mode == "hold") {
      o.wait_time = std::chrono::seconds(30);
      int slots = static_cast<int>(num("--slots", 0));
      auto run = [&](leader::LeaderContext& ctx) {
        std::cout << "HELD " << ctx.fencing_token() << " " << ctx.slot() << std::endl;
        while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
      };
      if (slots > 0) {
        leader::ElectionOptions e;
        e.lease_time = o.lease_time;
        e.wait_time = o.wait_time;
        e.auto_extend = o.auto_extend;
        e.node_id = o.node_id;
        leader::LeaderGroupElector(store, {.election = e, .max_leaders = slots})
            .run_if_leader(a.at("--lock"), run);
      } else {
        leader::LeaderElector(store, o).run_if_leader(a.at("--lock"), run);
      }
      std::cout << "SKIPPED" << std::endl;
      return 1;
    }
    std::cerr << "unknown mode " << mode << "\n";
    return 64;
  } catch (const std::exception& e) {
    std::cerr << "leader_contract_child: " << e.what() << "\n";
    return 70;
  }
}
