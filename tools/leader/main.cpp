// The `leader` command: run a command once across replicas (`leader run`), show who holds a lock
// (`leader status`, `leader list`, `leader observe`), break a wedged lock (`leader release
// --force`), distributed cron (`leader cron`). Exit codes are listed in the footers and
// docs/cli.md.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "duration.hpp"
#include "exit_codes.hpp"
#include "leader/errors.hpp"
#include "leader/open.hpp"
#include "leader/uri.hpp"
#include "list_command.hpp"
#include "log.hpp"
#include "log_options.hpp"
#include "observe_command.hpp"
#include "parse_errors.hpp"
#include "release_command.hpp"
#include "run_command.hpp"
#include "status_command.hpp"
#include "store_location.hpp"
#ifdef LEADER_HAVE_CRON
#include "cron_command.hpp"
#endif
#ifdef LEADER_HAVE_SERVE
#include "serve_command.hpp"
#endif

#ifndef LEADER_VERSION
#define LEADER_VERSION "unknown"
#endif

namespace {

using namespace leader::cli;

// --store given empty or as memory: is a usage error (64), not a silent fallback.
CLI::Validator store_flag_check() {
  return CLI::Validator([](std::string& uri) { return store_uri_problem(uri, "--store"); }, "URI");
}

constexpr const char* kRunUsage =
    "Usage: leader run [--store URI] --lock NAME [--ttl 30s] [--wait 0s|forever] "
    "[--restart never|on-failure|always] [--min-hold 0s] [--slots N] [--grace 5s] "
    "[--skip-exit-code N] [--node-id ID] [--json|--json-file FILE] [-v|--quiet] "
    "[--log-format text|json] -- COMMAND [ARGS...]";
constexpr const char* kStatusUsage =
    "Usage: leader status [--store URI] --lock NAME [--slots N] [--json] [-v]";
constexpr const char* kCronUsage =
    "Usage: leader cron [--store URI] (--schedule CRON --lock NAME [--time-zone TZ] -- COMMAND "
    "[ARGS...] | --crontab FILE) [--ttl 30s] [--grace 5s] [--max-clock-skew 2s] [--misfire "
    "skip|run-once] [--node-id ID] [-v|--quiet]";
constexpr const char* kServeUsage =
    "Usage: leader serve [--store URI] [--listen 127.0.0.1:9464] [--campaign LOCK]... [--lock "
    "LOCK]... [--allow-remote --token-file FILE] [-v]";
constexpr const char* kMainUsage =
    "Usage: leader run|status|observe|list|release|cron|serve [OPTIONS] (see leader --help)";

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

constexpr const char* kCronFooter = R"(
Runs until SIGTERM/SIGINT on every replica; each firing of the schedule runs
COMMAND on one replica, supervised as by `leader run` (process group, lost-lease
kill, LEADER_LOCK, LEADER_FENCING_TOKEN, LEADER_NODE_ID, LEADER_SCHEDULED_AT).
One line per firing: ran here / ran elsewhere / skipped (timestamped log lines).
--crontab FILE: one job per line, "SCHEDULE LOCK COMMAND" (5 fields or @macro;
a 6-field schedule in double quotes; CRON_TZ=ZONE lines; # comments); each
COMMAND runs with /bin/sh -c. Replicas' clocks must agree within
--max-clock-skew; firings need a gap > 2 x skew + 250ms. Details: docs/cli.md.

Exit codes: 0 stopped by SIGTERM/SIGINT, 64 usage error (with the crontab line),
69 store unavailable, 77 store refused authentication, 78 store misconfigured,
126/127 COMMAND not executable / not found.)";

constexpr const char* kStatusFooter = R"(
Exit codes: 0 held, 3 free, 64 usage error, 69 store unavailable, 77 store refused
authentication, 78 store misconfigured.)";

leader::Duration duration_arg(const std::string& text, const char* flag) {
  return leader::cli::parse_duration(text, flag);
}

std::string version_text() {
  std::string stores;
  for (const auto& s : leader::registered_schemes()) stores += (stores.empty() ? "" : ", ") + s;
  return std::string("leader ") + LEADER_VERSION + " (stores: " + stores + ")";
}

// Options as text, converted after parsing so that errors name the flag.
struct RunText {
  std::string ttl = "30s", wait = "0s", min_hold = "0s", grace, restart = "never";
  CLI::Option* grace_option = nullptr;
  bool verbose = false, quiet = false;
};

void add_run(CLI::App& app, RunOptions& o, RunText& t) {
  auto* run = app.add_subcommand("run", "Run COMMAND if this replica gets the lock");
  run->footer(kRunFooter);
  run->positionals_at_end();
  run->add_option("--store", o.store, "Store URI (default: $LEADER_STORE, else SQLite file)")
      ->check(store_flag_check())
      ->type_name("URI");
  run->add_option("--lock", o.lock, "Lock name, e.g. nightly-report")
      ->type_name("NAME")
      ->required();
  run->add_option("--ttl", t.ttl, "Lease time, renewed while COMMAND runs")
      ->type_name("DURATION")
      ->capture_default_str();
  run->add_option("--wait", t.wait, "How long to wait for the lock; forever: hot standby")
      ->type_name("DURATION|forever")
      ->capture_default_str();
  run->add_option("--restart", t.restart,
                  "With --wait forever, when COMMAND exits: run it again (always, on-failure) "
                  "or step down (never)")
      ->check(CLI::IsMember({"never", "on-failure", "always"}))
      ->capture_default_str();
  run->add_option("--min-hold", t.min_hold, "Keep the lock at least this long after start")
      ->type_name("DURATION")
      ->capture_default_str();
  run->add_option("--slots", o.slots, "Allow N concurrent holders; sets LEADER_SLOT")
      ->check(CLI::Range(1, 1000));
  t.grace_option =
      run->add_option("--grace", t.grace,
                      "SIGTERM-to-SIGKILL delay when the lease is lost (default: 5s, shortened "
                      "to --ttl/2 - 1s for short leases)")
          ->type_name("DURATION");
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
  auto* verbose = run->add_flag("-v,--verbose", t.verbose,
                                "Say what happens (also that another replica holds the lock)");
  run->add_flag("-q,--quiet", t.quiet, "Only errors")->excludes(verbose);
  add_log_format_option(run);
  run->add_option("command", o.command, "COMMAND [ARGS...] (after --)")->required();
}

void add_status(CLI::App& app, StatusOptions& o, bool& verbose) {
  auto* status = app.add_subcommand("status", "Show who holds a lock");
  status->footer(kStatusFooter);
  status->add_option("--store", o.store, "Store URI (default: $LEADER_STORE, else SQLite file)")
      ->check(store_flag_check())
      ->type_name("URI");
  status->add_option("--lock", o.lock, "Lock name")->type_name("NAME")->required();
  status->add_option("--slots", o.slots, "Slots of a group lock (shows available slots)")
      ->check(CLI::Range(1, 1000));
  status->add_flag("--json", o.json, "Print JSON");
  status->add_flag("-v,--verbose", verbose, "Say which store is used");
  add_log_format_option(status);
}

// `message` with every word that may be a store URI redacted (CLI11 echoes stray arguments).
std::string redact_uri_words(const std::string& message) {
  std::string out;
  std::size_t start = 0;
  while (start < message.size()) {
    std::size_t end = std::min(message.find(' ', start), message.size());
    std::string word = message.substr(start, end - start);
    bool uri_like = word.find("://") != std::string::npos || word.find('@') != std::string::npos ||
                    word.find('?') != std::string::npos;
    out += uri_like ? leader::redact_uri(word) : word;
    if (end < message.size()) out += ' ';
    start = end + 1;
  }
  return out;
}

#ifdef LEADER_HAVE_CRON
// Options of `leader cron` as text, converted after parsing so that errors name the flag.
struct CronText {
  std::string ttl = "30s", grace, skew = "2s", misfire = "skip";
  CLI::Option* grace_option = nullptr;
  bool verbose = false, quiet = false;
};

void add_cron(CLI::App& app, CronOptions& o, CronText& t) {
  auto* cron =
      app.add_subcommand("cron", "Run COMMAND on one replica at each firing of a schedule");
  cron->footer(kCronFooter);
  cron->positionals_at_end();
  cron->add_option("--store", o.store, "Store URI (default: $LEADER_STORE, else SQLite file)")
      ->check(store_flag_check())
      ->type_name("URI");
  cron->add_option("--schedule", o.schedule, "Cron expression, e.g. '*/5 * * * *'")
      ->type_name("CRON");
  cron->add_option("--lock", o.lock, "Lock name of the job")->type_name("NAME");
  cron->add_option("--time-zone", o.time_zone, "UTC or an IANA zone, e.g. Europe/Berlin")
      ->type_name("TZ")
      ->capture_default_str();
  cron->add_option("--crontab", o.crontab, "Several jobs from a crontab-like file")
      ->type_name("FILE");
  cron->add_option("--ttl", t.ttl, "Lease time, renewed while COMMAND runs")
      ->type_name("DURATION")
      ->capture_default_str();
  t.grace_option = cron->add_option("--grace", t.grace, "SIGTERM-to-SIGKILL delay (as leader run)")
                       ->type_name("DURATION");
  cron->add_option("--max-clock-skew", t.skew, "Largest clock difference between replicas")
      ->type_name("DURATION")
      ->capture_default_str();
  cron->add_option("--misfire", t.misfire, "A firing started too late: skip or run-once")
      ->check(CLI::IsMember({"skip", "run-once"}))
      ->capture_default_str();
  cron->add_option("--node-id", o.node_id, "This replica's id (default: <host>:<pid>)")
      ->type_name("ID");
  auto* verbose = cron->add_flag("-v,--verbose", t.verbose, "Say what happens");
  cron->add_flag("-q,--quiet", t.quiet, "Only errors")->excludes(verbose);
  add_log_format_option(cron);
  cron->add_option("command", o.command, "COMMAND [ARGS...] (after --)");
}

int run_cron(CronOptions& o, const CronText& t) {
  o.ttl = duration_arg(t.ttl, "--ttl");
  o.grace =
      t.grace_option->count() > 0 ? duration_arg(t.grace, "--grace") : default_grace_for(o.ttl);
  o.max_clock_skew = duration_arg(t.skew, "--max-clock-skew");
  o.run_once = t.misfire == "run-once";
  o.verbosity = t.verbose ? 1 : (t.quiet ? -1 : 0);
  return cron(o);
}
#endif

// Usage lines of the subcommands registered through add_<name>_command().
std::map<std::string, std::string>& extra_usages() {
  static std::map<std::string, std::string> usages;
  return usages;
}

int usage_error(const std::string& message, const std::string& sub) {
  std::string usage = sub == "run"      ? kRunUsage
                      : sub == "status" ? kStatusUsage
                      : sub == "cron"   ? kCronUsage
                                        : kMainUsage;
  if (auto it = extra_usages().find(sub); it != extra_usages().end()) usage = it->second;
  std::fprintf(stderr, "leader: %s\n%s\nRun 'leader %s--help' for more information.\n",
               without_secrets(redact_uri_words(message)).c_str(), usage.c_str(),
               sub.empty() ? "" : (sub + " ").c_str());
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Run a command once across replicas, and inspect leader locks"};
  app.set_version_flag("--version", version_text);
  app.require_subcommand(1);
  RunOptions run_options;
  RunText run_text;
  StatusOptions status_options;
  bool status_verbose = false;
  add_run(app, run_options, run_text);
  add_status(app, status_options, status_verbose);
#ifdef LEADER_HAVE_CRON
  CronOptions cron_options;
  CronText cron_text;
  add_cron(app, cron_options, cron_text);
#endif
#ifdef LEADER_HAVE_SERVE
  ServeOptions serve_options;
  add_serve_command(app, serve_options);
  extra_usages()["serve"] = kServeUsage;
#endif
  std::vector<Subcommand> subcommands = {add_list_command(app), add_release_command(app),
                                         add_observe_command(app)};
  for (const auto& c : subcommands) extra_usages()[c.app->get_name()] = c.usage;
  std::vector<std::string> names;
  for (const CLI::App* s : app.get_subcommands({})) names.push_back(s->get_name());
  std::string sub;
  if (argc > 1 && std::find(names.begin(), names.end(), argv[1]) != names.end()) sub = argv[1];
  if (argc > 1 && sub.empty() && argv[1][0] != '-') {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    return usage_error(std::string("unknown command '") + argv[1] + "'; the commands are " + known +
                           " (e.g. leader run --lock NAME -- COMMAND)",
                       "");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return usage_error(explain_parse_error(e, sub, names), sub);
  }
  try {
    for (const auto& c : subcommands)
      if (c.app->parsed()) return c.run();
#ifdef LEADER_HAVE_CRON
    if (app.got_subcommand("cron")) return run_cron(cron_options, cron_text);
#endif
#ifdef LEADER_HAVE_SERVE
    if (app.got_subcommand("serve")) return serve(serve_options);
#endif
    if (app.got_subcommand("status")) {
      status_options.verbosity = status_verbose ? 1 : 0;
      return status(status_options);
    }
    run_options.ttl = duration_arg(run_text.ttl, "--ttl");
    run_options.wait_forever = run_text.wait == "forever";
    run_options.wait =
        run_options.wait_forever ? leader::Duration{0} : duration_arg(run_text.wait, "--wait");
    run_options.restart = restart_policy(run_text.restart);
    run_options.min_hold = duration_arg(run_text.min_hold, "--min-hold");
    run_options.grace = run_text.grace_option->count() > 0 ? duration_arg(run_text.grace, "--grace")
                                                           : default_grace_for(run_options.ttl);
    run_options.verbosity = run_text.verbose ? 1 : (run_text.quiet ? -1 : 0);
    return run(run_options);
  } catch (const UsageError& e) {
    return usage_error(e.what(), sub);
  } catch (const StoreFailure& e) {
    write_log_line("error", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    write_log_line("error", std::string("internal error: ") + e.what());
    return kExitOsError;
  }
}
