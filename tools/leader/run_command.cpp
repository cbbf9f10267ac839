// `leader run`: run() -> run_once() -> campaign() (acquire, or wait as a hot standby) ->
// run_held() (COMMAND under the held lease, supervised; --restart runs it again).

#include "run_command.hpp"

#include <poll.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <random>
#include <system_error>

#include "exit_codes.hpp"
#include "leader/uri.hpp"
#include "process_group.hpp"
#include "run_election.hpp"
#include "run_report.hpp"
#include "service_notify.hpp"
#include "store_location.hpp"
#include "supervise.hpp"

namespace leader::cli {
namespace {

// The environment of the command: ours, with the LEADER_* variables of this lease.
std::vector<std::string> command_environment(LeaderContext& ctx, const RunOptions& o) {
  std::vector<std::pair<std::string, std::string>> vars = {
      {"LEADER_LOCK", ctx.lock_name()},
      {"LEADER_FENCING_TOKEN", std::to_string(ctx.fencing_token())},
      {"LEADER_NODE_ID", ctx.node_id()}};
  if (o.slots > 0) vars.emplace_back("LEADER_SLOT", std::to_string(ctx.slot()));
  return environment_with(vars);
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

// The end of a held lease (already released or lost): says how it ended, in the log and the
// report; returns `code`.
int report_held_end(LeaderContext& ctx, int code, const Election& election, const RunOptions& o,
                    const Log& log, RunReport& report) {
  LogFields fields{ctx.lock_name(), ctx.node_id(), ctx.fencing_token(), "lost"};
  if (code == kExitLeaseLost) {
    report.outcome = "lost";
    report.error = election.lost()->get();
    log.error("the lease on '" + ctx.lock_name() + "' was lost, not released" +
                  (report.error.empty() ? "" : " (" + report.error + ")") +
                  "; its command group was terminated (exit 75)",
              fields);
  } else {
    report.outcome = "ran";
    fields.event = "released";
    log.info("command finished (exit " + std::to_string(code) + "); released '" + ctx.lock_name() +
                 "'" + (o.min_hold > Duration{0} ? " (held at least --min-hold)" : ""),
             fields);
  }
  return code;
}

// Runs COMMAND under the held lease, supervised, again while --restart says so and the lease is
// held; then releases. Sets `stop_signalled` when SIGINT/SIGTERM stopped it.
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
                 std::to_string(group->pgid()),
             {ctx.lock_name(), ctx.node_id(), ctx.fencing_token(),
              round == 0 ? "acquired" : "restarted"});
    notify_status("leader of '" + ctx.lock_name() + "' as " + ctx.node_id() + " (fencing token " +
                  std::to_string(ctx.fencing_token()) + ")");
    LeaseWatch watch{ctx.stop_token(),
                     ctx.lock_name(),
                     [lost = election.lost()] { return lost->get(); },
                     [&ctx] { return ctx.deadline(); },
                     {},
                     [&stop_signalled, &o] {
                       stop_signalled = true;
                       notify_stopping("stopping: releasing '" + o.lock + "'");
                     }};
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
  return report_held_end(ctx, code, election, o, log, report);
}

// One attempt at the lease. With --wait forever a store outage (69) is survived, and said once
// (`store_down` remembers it); refused credentials (77) and a misconfigured store (78) end the
// standby as they end any command.
AcquireOutcome attempt(const Election& election, const RunOptions& o, SignalChannel& signals,
                       const Log& log, bool& store_down) {
  AcquireOutcome outcome;
  try {
    outcome = election.acquire(o, signals);
    if (store_down) log.notice("store reachable again; waiting for '" + o.lock + "'");
    store_down = false;
  } catch (const StoreFailure& e) {
    if (!o.wait_forever || e.exit_code() != kExitUnavailable) throw;
    if (!store_down) log.warning(std::string(e.what()) + "; still waiting (--wait forever)");
    store_down = true;
  }
  return outcome;
}

// Who holds o.lock, as the store lists them, for a message and its log line's fields (the first
// holder's node and token).
struct HeldBy {
  std::optional<LockState> state;
  std::string text;
  LogFields fields;
};

HeldBy held_by(const Election& election, const RunOptions& o, const std::string& fallback,
               const char* event) {
  HeldBy h{election.inspect(o.lock), {}, {.lock = o.lock, .event = event}};
  h.text = describe_holders(h.state, fallback);
  if (h.state && h.state->held()) {
    h.fields.node = h.state->holders.front().node_id;
    h.fields.token = h.state->holders.front().fencing_token;
  }
  return h;
}

// On a terminal or with -v, `leader run --wait` says what it waits for and who holds the lock:
// once, and again only when the holders change.
class WaitAnnouncer {
 public:
  WaitAnnouncer(const Election& election, const RunOptions& o, const Log& log)
      : election_(election), o_(o), log_(log) {}
  void announce() {
    if (!log_.shows_routine() || (!o_.wait_forever && o_.wait <= Duration{0})) return;
    HeldBy h = held_by(election_, o_, "", "waiting");
    if (!h.state || !h.state->held()) return;
    std::string who;
    for (const Holder& holder : h.state->holders) who += holder.node_id + "/" + holder.owner + " ";
    if (who == last_) return;
    last_ = who;
    log_.routine("waiting for '" + o_.lock + "' (--wait " +
                     (o_.wait_forever ? std::string("forever") : format_duration(o_.wait)) +
                     "): held by " + h.text,
                 h.fields);
    notify_status("waiting for '" + o_.lock + "', held by " + h.text);
  }

 private:
  const Election& election_;
  const RunOptions& o_;
  const Log& log_;
  std::string last_;  // the holders last announced
};

int interrupted(int sig, const RunOptions& o, const Log& log, RunReport& report) {
  notify_stopping("stopping (signal " + std::to_string(sig) + ")");
  log.notice("interrupted by signal " + std::to_string(sig) + " while waiting for '" + o.lock +
             "'");
  report.outcome = "interrupted";
  return kExitSignalBase + sig;
}

// Acquires the lease and runs COMMAND under it: once, or with --wait forever until stopped (hot
// standby; after a lost lease it campaigns again unless --restart never).
int campaign(const Election& election, const CommandSpec& spec, SignalChannel& signals,
             const RunOptions& o, const Log& log, RunReport& report) {
  bool store_down = false;  // --wait forever: an outage was logged, not its end yet
  WaitAnnouncer waiting(election, o, log);
  if (!o.wait_forever) waiting.announce();  // the elector waits up to --wait in one call
  for (bool first = true;; first = false) {
    AcquireOutcome outcome = attempt(election, o, signals, log, store_down);
    // Type=notify: up once the first attempt is done, holding the lease or standing by.
    if (first) notify_ready(outcome.acquisition ? "" : "waiting for '" + o.lock + "'");
    if (outcome.signal != 0) {
      if (outcome.acquisition.guard) outcome.acquisition.guard->release();
      return interrupted(outcome.signal, o, log, report);
    }
    if (!outcome.acquisition) {
      if (o.wait_forever) {
        if (!store_down) waiting.announce();
        if (int sig = standby_pause(signals); sig != 0) return interrupted(sig, o, log, report);
        continue;
      }
      report.outcome = "skipped";
      HeldBy h = held_by(election, o, outcome.acquisition.skipped.detail, "skipped");
      report.holders = h.text;
      report.holder_state = h.state;
      log.routine("'" + o.lock + "' is held by " + h.text + "; not running " + o.command.front(),
                  h.fields);
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

int run_once(const RunOptions& o, RunReport& report) {
  std::vector<int> inherited = open_descriptors();  // before leader opens anything itself
  SignalChannel signals;  // first: every thread started later inherits the blocked mask
  Log log(o.verbosity);
  check_run_options(o);
  int error = 0;
  auto path = resolve_executable(o.command.front(), error);
  if (!path) {
    log.error("cannot execute '" + o.command.front() + "': " + std::strerror(error));
    report.outcome = "not_started";
    report.error =
        std::string("cannot execute '") + o.command.front() + "': " + std::strerror(error);
    return error == ENOENT ? kExitNotFound : kExitCannotExecute;
  }
  Election election(open_store(o.store, log, &report.store), o);
  CommandSpec spec{*path, o.command, {}, std::move(inherited)};
  return campaign(election, spec, signals, o, log, report);
}

}  // namespace

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
