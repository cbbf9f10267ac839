#include "run_command.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>

#include "exit_codes.hpp"
#include "leader/elector.hpp"
#include "leader/group.hpp"
#include "leader/history.hpp"
#include "leader/names.hpp"
#include "leader/open.hpp"
#include "leader/uri.hpp"
#include "store_location.hpp"

extern char** environ;

namespace leader::cli {
namespace {

// Remembers why the lease was lost (on_lost runs on the renewal thread) and the last renewal
// error before it (renew_failed events, delivered on the event bus's thread), so that the loss is
// logged with its cause.
class LostReason : public ElectionListener {
 public:
  void on_lost(const LeaseInfo& /*lease*/, const std::string& reason) override {
    std::lock_guard lock(mu_);
    reason_ = reason;
  }
  void on_renew_failed(const std::string& error) {
    std::lock_guard lock(mu_);
    last_renew_error_ = error;
  }
  std::string get() const {
    std::lock_guard lock(mu_);
    if (last_renew_error_.empty() || reason_.find(last_renew_error_) != std::string::npos)
      return reason_;
    return reason_ + (reason_.empty() ? "" : "; ") + "last renewal error: " + last_renew_error_;
  }

 private:
  mutable std::mutex mu_;
  std::string reason_;
  std::string last_renew_error_;
};

// What `leader run --json` reports.
struct RunReport {
  std::string outcome =
      "error";  // ran, skipped, lost, interrupted, not_started, error, usage_error
  int exit_code = 0;
  std::string store;
  std::string node_id;
  std::uint64_t fencing_token = 0;
  int slot = -1;
  std::string holders;  // skipped: who holds the lock
  std::string error;    // lost: the cause; error: the message
  WallTime started{};
  WallTime finished{};
};

// The elector of this run: single leader, or one of N slots.
struct Election {
  std::optional<LeaderElector> single;
  std::optional<LeaderGroupElector> group;
  std::shared_ptr<LostReason> lost = std::make_shared<LostReason>();

  Election(std::shared_ptr<LeaseStore> store, const RunOptions& o) {
    // --wait forever: one attempt at a time, run_once() pauses between them (standby_pause).
    ElectionOptions e{.wait_time = o.wait_forever ? Duration{0} : o.wait,
                      .lease_time = o.ttl,
                      .min_lease_time = o.min_hold,
                      .auto_extend = true,
                      .safety_margin = safety_margin_for(o.ttl, o.grace)};
    if (!o.node_id.empty()) e.node_id = o.node_id;
    ElectorHooks hooks;
    hooks.listener = lost;
    try {
      if (o.slots > 0) {
        GroupOptions g{.wait_time = e.wait_time,
                       .lease_time = e.lease_time,
                       .min_lease_time = e.min_lease_time,
                       .auto_extend = true,
                       .node_id = e.node_id,
                       .safety_margin = e.safety_margin,
                       .max_leaders = o.slots};
        group.emplace(std::move(store), g, hooks);
      } else {
        single.emplace(std::move(store), e, hooks);
      }
    } catch (const InvalidArgument& err) {
      throw UsageError(err.what());
    }
  }
  const Elector& elector() const {
    if (group) return *group;
    return *single;
  }
  /// Logs every failed renewal as a warning (the cause of a later loss) and remembers it.
  Subscription log_renewal_failures(const Log& log) const {
    return elector().events().subscribe(
        [lost = lost, log](const ElectionEvent& e) {
          std::string error =
              (e.error_code ? std::string(to_string(*e.error_code)) + ": " : "") + e.detail;
          lost->on_renew_failed(error);
          log.warning("renewing the lease on '" + e.lock + "' failed (" + error +
                      "); retrying until the local deadline");
        },
        {.kinds = {EventKind::renew_failed}});
  }
};

// The outcome of waiting for the lease: the acquisition, or the signal that interrupted it.
struct AcquireOutcome {
  Acquisition acquisition;
  int signal = 0;
};

// Acquires while a watcher thread turns SIGINT/SIGTERM/SIGHUP into a stop request.
AcquireOutcome acquire_interruptibly(const Election& election, const std::string& lock,
                                     SignalChannel& signals) {
  std::stop_source stop;
  std::atomic<int> received{0};
  int done = ::eventfd(0, EFD_CLOEXEC);
  std::thread watcher([&] {
    pollfd fds[2] = {{signals.fd(), POLLIN, 0}, {done, POLLIN, 0}};
    while (received.load() == 0) {
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
      if ((fds[1].revents & POLLIN) != 0) return;
      for (int sig : signals.drain()) {
        if (sig == SIGCHLD) continue;
        received.store(sig);
        stop.request_stop();
      }
    }
  });
  auto finish = [&] {
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(done, &one, sizeof one);
    watcher.join();
    ::close(done);
  };
  AcquireOutcome out;
  try {
    out.acquisition = election.elector().acquire(lock, stop.get_token());
  } catch (...) {
    finish();
    throw;
  }
  finish();
  out.signal = received.load();
  return out;
}

std::shared_ptr<LeaseStore> open_store(const RunOptions& o, const Log& log, RunReport& report) {
  StoreChoice choice = choose_store(o.store);
  std::string shown = redact_uri(choice.uri);
  report.store = shown;
  try {
    shown = announce_store(choice, log);
    report.store = shown;
    return leader::open(choice.uri);
  } catch (const std::exception& e) {
    throw store_failure("cannot open store " + shown, e);
  }
}

// The environment of the command: ours, with the LEADER_* variables of this lease.
std::vector<std::string> command_environment(LeaderContext& ctx, const RunOptions& o) {
  std::vector<std::pair<std::string, std::string>> vars = {
      {"LEADER_LOCK", ctx.lock_name()},
      {"LEADER_FENCING_TOKEN", std::to_string(ctx.fencing_token())},
      {"LEADER_NODE_ID", ctx.node_id()}};
  if (o.slots > 0) vars.emplace_back("LEADER_SLOT", std::to_string(ctx.slot()));
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    bool overridden = entry.rfind("LEADER_SLOT=", 0) == 0;
    for (const auto& [name, value] : vars) overridden |= entry.rfind(name + "=", 0) == 0;
    if (!overridden) env.push_back(std::move(entry));
  }
  for (const auto& [name, value] : vars) {
    env.push_back(name + "=");
    env.back() += value;
  }
  return env;
}

void validate(const RunOptions& o) {
  try {
    validate_lock_name(o.lock);
  } catch (const InvalidArgument& e) {
    throw UsageError(std::string("--lock: ") + e.what());
  }
  if (o.ttl <= Duration{0}) throw UsageError("--ttl must be greater than 0");
  if (o.min_hold > o.ttl)
    throw UsageError("--min-hold " + format_duration(o.min_hold) + " is longer than --ttl " +
                     format_duration(o.ttl) + "; it must be at most the lease time");
  if (o.command.empty()) throw UsageError("no COMMAND given after --");
  if (o.restart != Restart::never && !o.wait_forever)
    throw UsageError(
        "--restart needs --wait forever (a replica that runs COMMAND once has "
        "nothing to restart)");
  (void)safety_margin_for(o.ttl, o.grace);
}

std::string holder_description(const Election& election, const std::string& lock,
                               const Skipped& skipped) {
  try {
    LockState state = election.elector().inspect(lock);
    std::string out;
    for (const Holder& h : state.holders) {
      out += out.empty() ? "" : ", ";
      out += h.node_id + " (fencing token " + std::to_string(h.fencing_token) + ", expires in " +
             format_duration(h.expires_in) + ")";
    }
    if (!out.empty()) return out;
  } catch (const std::exception&) {
    // best effort: fall back to what the elector said
  }
  return skipped.detail.empty() ? "another replica" : skipped.detail;
}

// The store may grant less than --ttl (ZooKeeper caps sessions): --grace must fit the grant too,
// or the command could outlive the lease on the store. Releases and throws UsageError otherwise.
void check_granted_ttl(LeaseGuard& guard, const RunOptions& o) {
  Duration granted = guard.context().lease().granted_ttl;
  if (granted <= Duration{0} || granted >= o.ttl) return;
  Duration margin = safety_margin_for(o.ttl, o.grace);
  if (margin <= granted / 2) return;
  guard.release();
  throw UsageError("the store granted a ttl of " + format_duration(granted) + " (asked --ttl " +
                   format_duration(o.ttl) + "): --grace " + format_duration(o.grace) +
                   " needs a safety margin of " + format_duration(margin) +
                   ", more than half the granted ttl, so the command group could not be killed "
                   "before the lease may expire on the store; use --grace " +
                   format_duration(std::max(Duration{0}, granted / 2 - kKillSlack)) +
                   " or less, or a --ttl the store grants; released the lock");
}

// --restart: whether COMMAND runs again after exiting with `code` under a lease still held.
bool runs_again(const RunOptions& o, int code) {
  if (!o.wait_forever || code == kExitLeaseLost) return false;
  return o.restart == Restart::always || (o.restart == Restart::on_failure && code != 0);
}

// Waits `ms` unless SIGINT/SIGTERM/SIGHUP comes first; returns that signal, else 0.
int wait_unless_signalled(SignalChannel& signals, int ms) {
  pollfd fd{signals.fd(), POLLIN, 0};
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (::poll(&fd, 1, static_cast<int>(left.count()) + 1) > 0) {
      for (int sig : signals.drain())
        if (sig != SIGCHLD) return sig;
    }
  }
  return 0;
}

// Waits one second before a restart; false when SIGINT/SIGTERM/SIGHUP came meanwhile.
bool restart_delay(SignalChannel& signals) {
  constexpr int kRestartDelayMs = 1000;  // a COMMAND that fails at once does not spin
  return wait_unless_signalled(signals, kRestartDelayMs) == 0;
}

// --wait forever: the pause between a standby's attempts, 250-500 ms (jittered so that standbys
// do not try in step). A released lock is taken within that plus one store call; the elector's
// own backoff would grow to 1 s. Returns the signal that ended the pause, else 0.
int standby_pause(SignalChannel& signals) {
  constexpr int kStandbyRetryMs = 500;
  static std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<int> jitter(kStandbyRetryMs / 2, kStandbyRetryMs);
  return wait_unless_signalled(signals, jitter(rng));
}

int run_held(LeaseGuard& guard, const CommandSpec& base, SignalChannel& signals,
             const Election& election, const RunOptions& o, const Log& log, RunReport& report,
             bool& stop_signalled) {
  LeaderContext& ctx = guard.context();
  report.node_id = ctx.node_id();
  report.fencing_token = ctx.fencing_token();
  if (o.slots > 0) report.slot = ctx.slot();
  CommandSpec spec = base;
  spec.env = command_environment(ctx, o);
  spec.grace = o.grace;
  Subscription renewal_failures = election.log_renewal_failures(log);
  int code = 0;
  for (int round = 0;; ++round) {
    spec.deadline = ctx.deadline();
    std::optional<CommandGroup> group;
    try {
      group.emplace(CommandGroup::start(spec));
    } catch (const std::system_error& e) {
      log.error(std::string("cannot start the command: ") + e.what());
      renewal_failures.unsubscribe();
      guard.release(true, e.what());
      report.outcome = "not_started";
      report.error = e.what();
      return kExitOsError;
    }
    log.info((round == 0 ? "acquired '" : "still holding '") + ctx.lock_name() + "' as " +
             ctx.node_id() + " (fencing token " + std::to_string(ctx.fencing_token()) +
             (o.slots > 0 ? ", slot " + std::to_string(ctx.slot()) : std::string()) +
             "); running " + o.command.front() + " as process group " +
             std::to_string(group->pgid()));
    LeaseWatch watch{ctx.stop_token(),
                     ctx.lock_name(),
                     [lost = election.lost] { return lost->get(); },
                     [&ctx] { return ctx.deadline(); },
                     {},
                     [&stop_signalled] { stop_signalled = true; }};
    code = supervise(*group, signals, watch, o, log);
    if (stop_signalled || !runs_again(o, code) || !ctx.still_leader()) break;
    log.notice("command exited (exit " + std::to_string(code) + "); --restart: running it again");
    if (!restart_delay(signals)) {
      stop_signalled = true;
      break;
    }
    if (!ctx.still_leader()) break;
  }
  renewal_failures.unsubscribe();
  guard.release(code != 0);
  if (code == kExitLeaseLost) {
    report.outcome = "lost";
    report.error = election.lost->get();
    log.error("the lease on '" + ctx.lock_name() + "' was lost, not released" +
              (report.error.empty() ? "" : " (" + report.error + ")") +
              "; its command group was terminated (exit 75)");
  } else {
    report.outcome = "ran";
    log.info("command finished (exit " + std::to_string(code) + "); released '" + ctx.lock_name() +
             "'" + (o.min_hold > Duration{0} ? " (held at least --min-hold)" : ""));
  }
  return code;
}

}  // namespace

Duration default_grace_for(Duration ttl) {
  return std::clamp(ttl / 2 - kKillSlack, Duration{0}, Duration{std::chrono::seconds(5)});
}

Duration safety_margin_for(Duration ttl, Duration grace) {
  if (grace < Duration{0}) throw UsageError("--grace must not be negative");
  if (ttl < 2 * kKillSlack)
    throw UsageError("--ttl " + format_duration(ttl) +
                     " is too short: the command group must be killed at least 1s before the "
                     "lease can expire on the store, within a margin of at most --ttl / 2; use "
                     "--ttl 2s or more");
  Duration margin = std::max(ttl / 5, grace + kKillSlack);
  if (margin > ttl / 2)
    throw UsageError("--grace " + format_duration(grace) + " does not fit in --ttl " +
                     format_duration(ttl) +
                     ": the command group must be killed before the lease can expire on the "
                     "store, which needs --grace + 1s <= --ttl / 2; use --ttl " +
                     format_duration(2 * (grace + kKillSlack)) + " or more, or a shorter --grace");
  return margin;
}

namespace {

// Waits for the lease; store errors become StoreFailure, bad arguments UsageError.
AcquireOutcome acquire_or_throw(const Election& election, const RunOptions& o,
                                SignalChannel& signals) {
  AcquireOutcome outcome;
  try {
    outcome = acquire_interruptibly(election, o.lock, signals);
  } catch (const GrantTooShort& e) {
    // The elector refuses (and releases) a lease whose granted ttl cannot hold the margin --grace
    // needs: a configuration error of this command line, like --grace against --ttl.
    throw UsageError(
        "--grace " + format_duration(o.grace) +
        " does not fit in the ttl the store granted (asked --ttl " + format_duration(o.ttl) +
        "; --grace + 1s must be at most half the granted ttl); the lock was released: " + e.what());
  } catch (const BackendError& e) {
    throw store_failure("store failed while acquiring '" + o.lock + "'", e);
  } catch (const InvalidArgument& e) {
    throw UsageError(e.what());
  }
  return outcome;
}

int run_once(const RunOptions& o, RunReport& report) {
  std::vector<int> inherited = open_descriptors();  // before leader opens anything itself
  SignalChannel signals;  // first: every thread started later inherits the blocked mask
  Log log(o.verbosity);
  validate(o);
  int error = 0;
  auto path = resolve_executable(o.command.front(), error);
  if (!path) {
    log.error("cannot execute '" + o.command.front() + "': " + std::strerror(error));
    report.outcome = "not_started";
    report.error =
        std::string("cannot execute '") + o.command.front() + "': " + std::strerror(error);
    return error == ENOENT ? kExitNotFound : kExitCannotExecute;
  }
  Election election(open_store(o, log, report), o);
  CommandSpec spec{*path, o.command, {}, std::move(inherited)};
  bool store_down = false;  // --wait forever: an outage was logged, not its end yet
  for (;;) {                // once, or with --wait forever until stopped (hot standby)
    AcquireOutcome outcome;
    try {
      outcome = acquire_or_throw(election, o, signals);
      if (store_down) log.notice("store reachable again; waiting for '" + o.lock + "'");
      store_down = false;
    } catch (const StoreFailure& e) {
      // A standby outlives an outage (69) and says so once; refused credentials (77) and a
      // misconfigured store (78) end it as they end any command.
      if (!o.wait_forever || e.exit_code() != kExitUnavailable) throw;
      if (!store_down) log.warning(std::string(e.what()) + "; still waiting (--wait forever)");
      store_down = true;
    }
    if (outcome.signal != 0) {
      if (outcome.acquisition.guard) outcome.acquisition.guard->release();
      log.notice("interrupted by signal " + std::to_string(outcome.signal) +
                 " while waiting for '" + o.lock + "'");
      report.outcome = "interrupted";
      return kExitSignalBase + outcome.signal;
    }
    if (!outcome.acquisition) {
      if (o.wait_forever) {
        if (int sig = standby_pause(signals); sig != 0) {
          log.notice("interrupted by signal " + std::to_string(sig) + " while waiting for '" +
                     o.lock + "'");
          report.outcome = "interrupted";
          return kExitSignalBase + sig;
        }
        continue;
      }
      report.outcome = "skipped";
      report.holders = holder_description(election, o.lock, outcome.acquisition.skipped);
      log.routine("'" + o.lock + "' is held by " + report.holders + "; not running " +
                  o.command.front());
      return o.skip_exit_code;
    }
    check_granted_ttl(*outcome.acquisition.guard, o);
    bool stop_signalled = false;
    int code = run_held(*outcome.acquisition.guard, spec, signals, election, o, log, report,
                        stop_signalled);
    if (!o.wait_forever || stop_signalled || o.restart == Restart::never || code != kExitLeaseLost)
      return code;
    log.notice("lease on '" + o.lock + "' lost; campaigning again (--restart)");
  }
}

// Writes the result object: one line on stdout, or the file of --json-file (replaced whole).
void write_report(const RunOptions& o, const RunReport& r) {
  nlohmann::json j = {
      {"lock", o.lock},
      {"outcome", r.outcome},
      {"exit_code", r.exit_code},
      {"store", r.store},
      {"started_at", format_utc(r.started)},
      {"finished_at", format_utc(r.finished)},
      {"duration_ms",
       std::chrono::duration_cast<std::chrono::milliseconds>(r.finished - r.started).count()}};
  if (!r.node_id.empty()) j["node_id"] = r.node_id;
  if (r.fencing_token != 0) j["fencing_token"] = r.fencing_token;
  if (r.slot >= 0) j["slot"] = r.slot;
  if (!r.holders.empty()) j["held_by"] = r.holders;
  if (!r.error.empty()) j["error"] = without_secrets(r.error);
  std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (o.json_file.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return;
  }
  std::string tmp = o.json_file + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      Log(0).error("cannot write --json-file " + o.json_file + ": " + std::strerror(errno));
      return;
    }
  }
  if (std::rename(tmp.c_str(), o.json_file.c_str()) != 0) {
    Log(0).error("cannot write --json-file " + o.json_file + ": " + std::strerror(errno));
    std::remove(tmp.c_str());
  }
}

}  // namespace

Restart restart_policy(std::string_view text) {
  if (text == "never") return Restart::never;
  if (text == "on-failure") return Restart::on_failure;
  if (text == "always") return Restart::always;
  throw UsageError("--restart " + std::string(text) + ": expected never, on-failure or always");
}

int run(const RunOptions& o) {
  RunReport report;
  report.started = std::chrono::system_clock::now();
  bool wanted = o.json || !o.json_file.empty();
  auto finish = [&](int code, const std::string& outcome, const std::string& error) {
    report.exit_code = code;
    if (!outcome.empty()) report.outcome = outcome;
    if (!error.empty()) report.error = error;
    report.finished = std::chrono::system_clock::now();
    if (wanted) write_report(o, report);
  };
  try {
    int code = run_once(o, report);
    finish(code, "", "");
    return code;
  } catch (const StoreFailure& e) {
    finish(e.exit_code(), "error", e.what());
    throw;
  } catch (const UsageError& e) {
    finish(kExitUsage, "usage_error", e.what());
    throw;
  }
}

}  // namespace leader::cli
