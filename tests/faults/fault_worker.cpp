// fault_worker: one contender of the fault suite (method and figures: docs/faults.md).
//
//   fault_worker --uri U --lock L --dir D --id N [--lease-ms 1500] [--step-ms 50]
//                [--max-steps 60] [--seconds 30] [--wait-ms 200] [--write-delay-ms 20]
//                [--clock-file F] [--group N] [--extend 1]
//
// Until --seconds have passed, the worker calls run_if_leader with auto_extend. While it holds the
// lease it works in steps of --step-ms; before each step's write it checks stop_token() and
// still_leader(), then, --write-delay-ms later (the write in flight), "writes" to a fenced
// resource: D/ledger appended under flock(D/fence), accepted only when the token is not lower than
// the highest token accepted so far for the lease's slot (what a fencing resource does: a single
// lease is slot 0; --group N uses a LeaderGroupElector with max_leaders N, one fenced row per
// slot). Every timestamp is the real
// CLOCK_MONOTONIC read by a raw syscall, so that a worker whose clocks are faked by libfaketime
// still logs true times. Ledger lines:
//   A token pid id attempt_ns start_ns deadline_ns slot   the action started (lease granted)
//   W token pid check_ns write_ns accepted           a write reached the resource
//   E token pid end_ns stop_ns why                   the action returned (why: done|stop|lost)
//   X token pid t0_ns t1_ns ttl_ms ok                ctx.extend(ttl) called at t0, returned at t1
// --extend 1 calls ctx.extend() before one step in twelve while holding, with a ttl shorter or
// longer than the lease (auto_extend stays on, so later renewals must keep the extended ttl).
// --campaign 1 runs a leader::Campaign (retry period --retry-ms, default 100) instead of
// run_if_leader calls: the elected worker works until its stop fires (no step limit), then
// campaigns again; SIGTERM stops the campaign (the lease is released) and the worker exits 0;
// SIGUSR1 calls campaign.resign() (steps down, campaigns again after the hold-off).
// --observe 1 makes the process the store's observer instead of a contender: until --seconds pass
// (or SIGTERM) it calls inspect() every 20 ms and appends "O send_ns reply_ns token pid" (token 0,
// pid 0 when free; pid parsed from the holder's node id "fault-<id>-<pid>"): what the server said
// at some instant between send and reply.
// --clock-file F steps the library's steady clock by the milliseconds written in F (SteppedClock).
// --door futures calls run_if_leader_async(...).get() instead of run_if_leader: the asynchronous
// door (its acquire through acquire_async where the store waits without a thread: Redis). The
// environment's LEADER_FAULTS_DOOR sets the default, so `LEADER_FAULTS_DOOR=futures
// tests/faults/run.sh --soak ...` soaks every topology through that door.
// D/w<N>.state holds "HOLD token pid" while the action runs and "IDLE 0 pid" otherwise.

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <stop_token>
#include <string>
#include <thread>

#include "leader/async.hpp"
#include "leader/leader.hpp"

namespace {

using namespace std::chrono_literals;

/// CLOCK_MONOTONIC through the raw syscall: libfaketime intercepts clock_gettime, not syscall.
std::int64_t true_ns() {
  timespec ts{};
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// The library's steady clock stepped by a number of milliseconds read from a file (polled every
/// 20 ms): a CLOCK_MONOTONIC step as the library sees it, timed waits included (libfaketime's
/// faked CLOCK_MONOTONIC does not reach pthread_cond_clockwait, so waits on it never end).
class SteppedClock final : public leader::Clock {
 public:
  explicit SteppedClock(std::string path) : path_(std::move(path)) {
    poller_ = std::jthread([this](const std::stop_token& st) {
      while (!st.stop_requested()) {
        if (FILE* f = std::fopen(path_.c_str(), "r")) {
          long ms = 0;
          if (std::fscanf(f, "%ld", &ms) == 1) offset_ms_ = ms;
          std::fclose(f);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  [[nodiscard]] leader::TimePoint now() const override {
    return std::chrono::steady_clock::now() + std::chrono::milliseconds(offset_ms_.load());
  }
  void wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  leader::TimePoint until) const override {
    auto real = until - std::chrono::milliseconds(offset_ms_.load());
    cv.wait_until(lock,
                  std::min(real, std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
  }

 private:
  std::string path_;
  std::atomic<long> offset_ms_{0};
  std::jthread poller_;
};

/// A time point of `clock` expressed on the true clock.
std::int64_t to_true_ns(const leader::Clock& clock, leader::TimePoint t) {
  auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(t - clock.now());
  return true_ns() + left.count();
}

struct Config {
  std::string uri, lock, dir, clock_file;
  int id = 0;
  long lease_ms = 1500, step_ms = 50, max_steps = 60, seconds = 30, wait_ms = 200;
  long write_delay_ms = 20;
  int group = 0;                  // 0: LeaderElector; N: LeaderGroupElector with max_leaders N
  bool extend = false;            // call ctx.extend() while holding
  bool campaign = false;          // a leader::Campaign instead of run_if_leader calls
  long retry_ms = 100;            // the campaign's retry period
  bool observe = false;           // poll inspect() and log what the store says
  std::string door = "blocking";  // blocking: run_if_leader; futures: run_if_leader_async
};

/// The fenced resource: an append-only ledger guarded by flock on the fence file.
class FencedResource {
 public:
  explicit FencedResource(const std::string& dir)
      : ledger_(::open((dir + "/ledger").c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644)),
        fence_(::open((dir + "/fence").c_str(), O_RDWR | O_CREAT, 0644)) {
    if (ledger_ < 0 || fence_ < 0) throw std::runtime_error("cannot open ledger in " + dir);
  }
  FencedResource(const FencedResource&) = delete;
  FencedResource& operator=(const FencedResource&) = delete;
  ~FencedResource() {
    ::close(ledger_);
    ::close(fence_);
  }

  /// Appends a write of `token` to row `slot`; accepted unless a higher token was accepted there.
  bool write(std::uint64_t token, int slot, std::int64_t check_ns) {
    ::flock(fence_, LOCK_EX);
    const off_t at = static_cast<off_t>(slot) * static_cast<off_t>(kRow);
    char buf[kRow] = {0};
    auto n = ::pread(fence_, buf, sizeof buf - 1, at);
    std::uint64_t highest = n > 0 ? std::strtoull(buf, nullptr, 10) : 0;
    bool accepted = token >= highest;
    append("W " + std::to_string(token) + " " + std::to_string(getpid()) + " " +
           std::to_string(check_ns) + " " + std::to_string(true_ns()) + " " +
           (accepted ? "1" : "0") + "\n");
    if (accepted && token > highest) {
      auto s = std::to_string(token);
      s.resize(kRow - 1, ' ');
      s += '\n';
      (void)::pwrite(fence_, s.data(), s.size(), at);
    }
    ::flock(fence_, LOCK_UN);
    return accepted;
  }

  /// Appends a lease record (A or E line) under the same lock, so lines never interleave.
  void record(const std::string& line) {
    ::flock(fence_, LOCK_EX);
    append(line);
    ::flock(fence_, LOCK_UN);
  }

 private:
  static constexpr std::size_t kRow = 24;  // one fixed-width row of the fence file per slot
  void append(const std::string& line) { (void)::write(ledger_, line.data(), line.size()); }
  int ledger_;
  int fence_;
};

void write_state(const Config& c, const std::string& text) {
  auto path = c.dir + "/w" + std::to_string(c.id) + ".state";
  auto tmp = path + ".tmp";
  if (FILE* f = std::fopen(tmp.c_str(), "w")) {
    std::fprintf(f, "%s %d\n", text.c_str(), static_cast<int>(getpid()));
    std::fclose(f);
    std::rename(tmp.c_str(), path.c_str());
  }
}

/// Calls ctx.extend() with a ttl shorter or longer than the lease and logs it (X line).
void extend(const Config& c, leader::LeaderContext& ctx, FencedResource& res, std::mt19937& rng) {
  static constexpr double kFactors[] = {0.4, 0.7, 1.5, 2.5};
  std::uniform_int_distribution<int> pick(0, 3);
  const long ttl_ms = static_cast<long>(static_cast<double>(c.lease_ms) * kFactors[pick(rng)]);
  const auto t0 = true_ns();
  int ok = 0;
  try {
    ok = ctx.extend(std::chrono::milliseconds(ttl_ms)) ? 1 : 0;
  } catch (const std::exception& e) {
    ok = -1;
    std::cerr << "fault_worker " << c.id << ": extend: " << e.what() << "\n";
  }
  res.record("X " + std::to_string(ctx.fencing_token()) + " " + std::to_string(getpid()) + " " +
             std::to_string(t0) + " " + std::to_string(true_ns()) + " " + std::to_string(ttl_ms) +
             " " + std::to_string(ok) + "\n");
}

/// One held lease: work in steps until done, stopped or no longer leader.
void work(const Config& c, const leader::Clock& clock, leader::LeaderContext& ctx,
          FencedResource& res, std::int64_t attempt, long steps, std::mt19937& rng) {
  const auto start = true_ns();
  const auto token = ctx.fencing_token();
  const auto tok = std::to_string(token);
  const auto pid = std::to_string(getpid());
  std::atomic<std::int64_t> stop_ns{0};
  std::stop_callback on_stop(ctx.stop_token(), [&] { stop_ns = true_ns(); });
  res.record("A " + tok + " " + pid + " " + std::to_string(c.id) + " " + std::to_string(attempt) +
             " " + std::to_string(start) + " " + std::to_string(to_true_ns(clock, ctx.deadline())) +
             " " + std::to_string(ctx.slot()) + "\n");
  write_state(c, "HOLD " + tok);
  const char* why = "done";
  std::uniform_int_distribution<int> coin(0, 11);  // rarer than renewals (every lease/3)
  for (long i = 0; i < steps; ++i) {
    if (c.extend && coin(rng) == 0) extend(c, ctx, res, rng);
    std::this_thread::sleep_for(std::chrono::milliseconds(c.step_ms));
    const auto check = true_ns();  // taken before the check: the check happened at or after it
    if (ctx.stop_token().stop_requested()) {
      why = "stop";
      break;
    }
    if (!ctx.still_leader()) {
      why = "lost";
      break;
    }
    // In flight to the resource: a pause here is what only the fencing token can catch.
    std::this_thread::sleep_for(std::chrono::milliseconds(c.write_delay_ms));
    res.write(token, ctx.slot(), check);
  }
  write_state(c, "IDLE 0");
  res.record("E " + tok + " " + pid + " " + std::to_string(true_ns()) + " " +
             std::to_string(stop_ns.load()) + " " + why + "\n");
}

Config parse(int argc, char** argv) {
  std::map<std::string, std::string> a;
  for (int i = 1; i + 1 < argc; i += 2) a[argv[i]] = argv[i + 1];
  auto num = [&](const char* k, long d) { return a.count(k) ? std::stol(a[k]) : d; };
  Config c;
  c.uri = a.at("--uri");
  c.lock = a.at("--lock");
  c.dir = a.at("--dir");
  if (a.count("--clock-file")) c.clock_file = a["--clock-file"];
  c.id = static_cast<int>(num("--id", 0));
  c.lease_ms = num("--lease-ms", c.lease_ms);
  c.step_ms = num("--step-ms", c.step_ms);
  c.max_steps = num("--max-steps", c.max_steps);
  c.seconds = num("--seconds", c.seconds);
  c.wait_ms = num("--wait-ms", c.wait_ms);
  c.write_delay_ms = num("--write-delay-ms", c.write_delay_ms);
  c.group = static_cast<int>(num("--group", 0));
  c.extend = num("--extend", 0) != 0;
  c.campaign = num("--campaign", 0) != 0;
  c.retry_ms = num("--retry-ms", c.retry_ms);
  c.observe = num("--observe", 0) != 0;
  if (const char* door = std::getenv("LEADER_FAULTS_DOOR"); door != nullptr && *door != '\0')
    c.door = door;  // every topology script's workers at once (run.sh --soak ...)
  if (a.count("--door")) c.door = a["--door"];
  if (c.door != "blocking" && c.door != "futures")
    throw std::invalid_argument("--door '" + c.door + "': expected blocking or futures");
  return c;
}

/// --campaign: one Campaign until --seconds pass or SIGTERM (blocked in main) arrives.
template <class Elector>
int campaign(const Config& c, const Elector& elector, const leader::Clock& clock) {
  FencedResource res(c.dir);
  std::mt19937 rng(static_cast<unsigned>(getpid()) * 7919u + static_cast<unsigned>(true_ns()));
  std::atomic<std::int64_t> attempt{true_ns()};
  std::atomic<long> errors{0};
  leader::CampaignCallbacks cb;
  cb.on_started_leading = [&](leader::LeaderContext& ctx) {
    work(c, clock, ctx, res, attempt.load(), std::numeric_limits<long>::max(), rng);
  };
  cb.on_stopped_leading = [&] { attempt = true_ns(); };
  cb.on_error = [&](const leader::BackendError& e) {
    ++errors;
    std::cerr << "fault_worker " << c.id << ": " << e.what() << "\n";
  };
  write_state(c, "IDLE 0");
  leader::Campaign campaign(elector, c.lock, cb,
                            {.retry_period = std::chrono::milliseconds(c.retry_ms)});
  campaign.start();
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigaddset(&term, SIGUSR1);
  const auto until = true_ns() + c.seconds * 1'000'000'000LL;
  const timespec tick{0, 100'000'000};
  while (true_ns() < until) {
    int sig = sigtimedwait(&term, nullptr, &tick);
    if (sig == SIGTERM) break;
    if (sig == SIGUSR1) (void)campaign.resign();
  }
  campaign.stop();
  std::cout << "TERMS " << campaign.terms() << " ERRORS " << errors.load() << std::endl;
  return 0;
}

/// The worker's loop on one elector (LeaderElector or LeaderGroupElector).
template <class Elector>
int loop(const Config& c, const Elector& elector, const leader::Clock& clock) {
  if (c.campaign) return campaign(c, elector, clock);
  FencedResource res(c.dir);
  std::mt19937 rng(static_cast<unsigned>(getpid()) * 7919u + static_cast<unsigned>(true_ns()));
  std::uniform_int_distribution<long> steps(1, c.max_steps);
  std::uniform_int_distribution<int> pause(1, 30);
  const auto until = true_ns() + c.seconds * 1'000'000'000LL;
  long runs = 0, errors = 0;
  write_state(c, "IDLE 0");
  while (true_ns() < until) {
    const auto attempt = true_ns();
    const long n = steps(rng);
    try {
      auto action = [&](leader::LeaderContext& ctx) { work(c, clock, ctx, res, attempt, n, rng); };
      const bool ran = c.door == "futures"
                           ? leader::run_if_leader_async(elector, c.lock, action).get()
                           : elector.run_if_leader(c.lock, action);
      if (ran) ++runs;
    } catch (const std::exception& e) {
      ++errors;
      std::cerr << "fault_worker " << c.id << ": " << e.what() << "\n";
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(pause(rng)));
  }
  std::cout << "RUNS " << runs << " ERRORS " << errors << std::endl;
  return 0;
}

/// --observe: the store's view of the lock, polled, in the ledger.
int observe(const Config& c, leader::LeaseStore& store) {
  FencedResource res(c.dir);
  const auto until = true_ns() + c.seconds * 1'000'000'000LL;
  long errors = 0;
  while (true_ns() < until) {
    const auto send = true_ns();
    try {
      leader::LockState state = store.inspect(c.lock, leader::Deadline::after(250ms));
      const auto reply = true_ns();
      std::uint64_t token = 0;
      long pid = 0;
      if (!state.holders.empty()) {
        token = state.holders.front().fencing_token;
        const std::string& node = state.holders.front().node_id;
        auto dash = node.rfind('-');
        if (node.rfind("fault-", 0) == 0 && dash != std::string::npos)
          pid = std::strtol(node.c_str() + dash + 1, nullptr, 10);
      }
      res.record("O " + std::to_string(send) + " " + std::to_string(reply) + " " +
                 std::to_string(token) + " " + std::to_string(pid) + "\n");
    } catch (const std::exception&) {
      ++errors;
    }
    std::this_thread::sleep_for(20ms);
  }
  std::cout << "OBSERVER ERRORS " << errors << std::endl;
  return 0;
}

int run(const Config& c) {
  auto store = leader::open(c.uri);
  if (c.observe) return observe(c, *store);
  leader::ElectorHooks hooks;
  hooks.clock =
      c.clock_file.empty() ? leader::Clock::system() : std::make_shared<SteppedClock>(c.clock_file);
  const auto& clock = *hooks.clock;
  const auto node = "fault-" + std::to_string(c.id) + "-" + std::to_string(getpid());
  leader::ElectionOptions o;
  o.lease_time = std::chrono::milliseconds(c.lease_ms);
  o.wait_time = std::chrono::milliseconds(c.wait_ms);
  o.auto_extend = true;
  o.on_backend_error = leader::OnBackendError::skip;
  o.node_id = node;
  if (c.group > 0)
    return loop(c,
                leader::LeaderGroupElector(store, {.election = o, .max_leaders = c.group}, hooks),
                clock);
  return loop(c, leader::LeaderElector(store, o, hooks), clock);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Config c = parse(argc, argv);
    if (c.campaign) {  // before any thread starts: every thread inherits the blocked signals
      sigset_t term;
      sigemptyset(&term);
      sigaddset(&term, SIGTERM);
      sigaddset(&term, SIGUSR1);
      pthread_sigmask(SIG_BLOCK, &term, nullptr);
    }
    return run(c);
  } catch (const std::exception& e) {
    std::cerr << "fault_worker: " << e.what() << "\n";
    return 70;
  }
}
