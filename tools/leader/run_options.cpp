// The options of `leader run`: CLI definition, conversion and checks (run_options.hpp).

#include "run_options.hpp"

#include <algorithm>
#include <memory>

#include "command_options.hpp"
#include "duration.hpp"
#include "exit_codes.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "leader/uri.hpp"
#include "log_options.hpp"
#include "run_command.hpp"

namespace leader::cli {
namespace {

constexpr const char* kRunUsage =
    "Usage: leader run [--store URI] --lock NAME [--ttl 30s] [--wait 0s|forever] "
    "[--restart never|on-failure|always] [--min-hold 0s] [--slots N] [--grace 5s] "
    "[--skip-exit-code N] [--node-id ID] [--json|--json-file FILE] [-v|--quiet] "
    "[--log-format text|json] -- COMMAND [ARGS...]";

constexpr const char* kRunFooter = R"(
COMMAND runs (without a shell) in its own process group with LEADER_LOCK,
LEADER_FENCING_TOKEN, LEADER_NODE_ID (and LEADER_SLOT with --slots) in its
environment. The lease is renewed while it runs; SIGINT, SIGTERM and SIGHUP are
forwarded to the group; the lease is released once every process of the group
has exited. If the lease is lost, the group gets SIGTERM, then SIGKILL after
--grace, before the lease can expire on the store.

Hot standby: --wait forever waits its turn (every replica runs the same line);
when COMMAND exits, --restart never steps down (releases, exits with its code),
on-failure runs it again after 1s if it failed, always runs it again; with
on-failure/always a lost lease campaigns again instead of exiting 75. SIGTERM
stops COMMAND and releases at once, so a standby takes over.

Store: --store, else $LEADER_STORE, else sqlite:///var/lib/leader/leader.db when
/var/lib/leader is writable, else $XDG_STATE_HOME/leader/leader.db
(~/.local/state/leader/leader.db); the default is always announced on stderr.

Another replica holding the lock is said on stderr only with -v or when stderr is
a terminal, so cron and systemd timers stay quiet. Durations: 30 (seconds),
500ms, 45s, 1m30s, 2h, 1d. Log lines: RFC 3339 UTC time, level, message;
--log-format json for one JSON object per line. --json prints a result object
(outcome, exit_code, fencing_token, ...) on stdout when leader ends; --json-file
writes it to FILE instead.

Exit codes:
  0        COMMAND exited 0, or another replica holds the lock (see --skip-exit-code)
  1-125    COMMAND's exit status
  126/127  COMMAND cannot be executed / was not found
  128+N    COMMAND was killed by signal N (or leader was, while waiting for the lock)
  64       usage error (bad option, duration or lock name; --grace does not fit --ttl)
  69       store unavailable: cannot connect, timed out (one-line reason on stderr)
  71       leader could not start COMMAND (fork failed)
  75       the lease was lost while COMMAND ran; its process group was killed
  77       the store refused authentication or authorisation
  78       store misconfigured: bad URI or URI parameter, unknown scheme, store not
           built into this leader, missing schema)";

// The options as parsed: durations and --restart stay text until converted, so that errors name
// the flag.
struct RunArguments {
  RunOptions options;
  std::string ttl = "30s", wait = "0s", min_hold = "0s", grace, restart = "never";
  CLI::Option* grace_option = nullptr;
  bool verbose = false, quiet = false;
};

// --lock, --ttl, --wait, --restart, --min-hold, --slots, --grace: the lease and its holding.
void add_lease_options(CLI::App* run, RunArguments& a) {
  RunOptions& o = a.options;
  run->add_option("--lock", o.lock, "Lock name, e.g. nightly-report")
      ->type_name("NAME")
      ->required();
  run->add_option("--ttl", a.ttl, "Lease time, renewed while COMMAND runs")
      ->type_name("DURATION")
      ->capture_default_str();
  run->add_option("--wait", a.wait, "How long to wait for the lock; forever: hot standby")
      ->type_name("DURATION|forever")
      ->capture_default_str();
  run->add_option("--restart", a.restart,
                  "With --wait forever, when COMMAND exits: run it again (always, on-failure) "
                  "or step down (never)")
      ->check(CLI::IsMember({"never", "on-failure", "always"}))
      ->capture_default_str();
  run->add_option("--min-hold", a.min_hold, "Keep the lock at least this long after start")
      ->type_name("DURATION")
      ->capture_default_str();
  run->add_option("--slots", o.slots, "Allow N concurrent holders; sets LEADER_SLOT")
      ->check(CLI::Range(1, 1000));
  a.grace_option =
      run->add_option("--grace", a.grace,
                      "SIGTERM-to-SIGKILL delay when the lease is lost (default: 5s, shortened "
                      "to --ttl/2 - 1s for short leases)")
          ->type_name("DURATION");
}

// --skip-exit-code, --node-id, --json, --json-file, -v, -q, --log-format and COMMAND.
void add_output_options(CLI::App* run, RunArguments& a) {
  RunOptions& o = a.options;
  run->add_option("--skip-exit-code", o.skip_exit_code,
                  "Exit code when another replica holds the lock")
      ->check(CLI::Range(0, 255))
      ->capture_default_str();
  run->add_option("--node-id", o.node_id, "This replica's id (default: <host>:<pid>)")
      ->type_name("ID");
  auto* json = run->add_flag("--json", o.json, "Print a JSON result object on stdout at the end");
  run->add_option("--json-file", o.json_file, "Write the JSON result object to FILE instead")
      ->type_name("FILE")
      ->excludes(json);
  auto* verbose = run->add_flag("-v,--verbose", a.verbose,
                                "Say what happens (also that another replica holds the lock)");
  run->add_flag("-q,--quiet", a.quiet, "Only errors")->excludes(verbose);
  add_log_format_option(run);
  run->add_option("command", o.command, "COMMAND [ARGS...] (after --)")->required();
}

Duration duration_arg(const std::string& text, const char* flag) {
  return cli::parse_duration(text, flag);
}

// The options with their text converted (each error names its flag).
RunOptions converted(const RunArguments& a) {
  RunOptions o = a.options;
  o.ttl = duration_arg(a.ttl, "--ttl");
  o.wait_forever = a.wait == "forever";
  o.wait = o.wait_forever ? Duration{0} : duration_arg(a.wait, "--wait");
  o.restart = restart_policy(a.restart);
  o.min_hold = duration_arg(a.min_hold, "--min-hold");
  o.grace =
      a.grace_option->count() > 0 ? duration_arg(a.grace, "--grace") : default_grace_for(o.ttl);
  o.verbosity = a.verbose ? 1 : (a.quiet ? -1 : 0);
  return o;
}

}  // namespace

Subcommand add_run_command(CLI::App& app) {
  auto a = std::make_shared<RunArguments>();
  auto* run = app.add_subcommand("run", "Run COMMAND if this replica gets the lock");
  run->footer(kRunFooter);
  run->positionals_at_end();
  add_store_option(run, a->options.store);
  add_lease_options(run, *a);
  add_output_options(run, *a);
  return {run, kRunUsage, [a] { return leader::cli::run(converted(*a)); }};
}

Restart restart_policy(std::string_view text) {
  if (text == "never") return Restart::never;
  if (text == "on-failure") return Restart::on_failure;
  if (text == "always") return Restart::always;
  throw UsageError("--restart " + std::string(text) + ": expected never, on-failure or always");
}

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

void check_run_options(const RunOptions& o) {
  check_lock_option(o.lock, "--lock");
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

}  // namespace leader::cli
