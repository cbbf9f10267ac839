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

#include "command_options.hpp"
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
#include "run_options.hpp"
#include "status_command.hpp"
#include "subcommand.hpp"
#ifdef LEADER_HAVE_CRON
#include "cron_command.hpp"
#endif
#ifdef LEADER_HAVE_SERVE
#include "probe_command.hpp"
#include "serve_command.hpp"
#endif

#ifndef LEADER_VERSION
#define LEADER_VERSION "unknown"
#endif

namespace {

using namespace leader::cli;

constexpr const char* kStatusUsage =
    "Usage: leader status [--store URI] --lock NAME [--slots N] [--json] [-v]";
constexpr const char* kCronUsage =
    "Usage: leader cron [--store URI] (--schedule CRON --lock NAME [--time-zone TZ] -- COMMAND "
    "[ARGS...] | --crontab FILE) [--ttl 30s] [--grace 5s] [--max-clock-skew 2s] [--misfire "
    "skip|run-once] [--node-id ID] [-v|--quiet]";
constexpr const char* kServeUsage =
    "Usage: leader serve [--store URI] [--listen 127.0.0.1:9464] [--campaign LOCK]... [--lock "
    "LOCK]... [--allow-remote] [--token-file FILE] [--clients-file FILE] [-v]";
constexpr const char* kMainUsage =
    "Usage: leader run|status|observe|list|release|cron|serve|probe [OPTIONS] (see leader --help)";

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

void add_status(CLI::App& app, StatusOptions& o, bool& verbose) {
  auto* status = app.add_subcommand("status", "Show who holds a lock");
  status->footer(kStatusFooter);
  add_store_option(status, o.store);
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
  add_store_option(cron, o.store);
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
  std::string usage = sub == "status" ? kStatusUsage : sub == "cron" ? kCronUsage : kMainUsage;
  if (auto it = extra_usages().find(sub); it != extra_usages().end()) usage = it->second;
  std::fprintf(stderr, "leader: %s\n%s\nRun 'leader %s--help' for more information.\n",
               without_secrets(redact_uri_words(message)).c_str(), usage.c_str(),
               sub.empty() ? "" : (sub + " ").c_str());
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  // Named: usage lines (and the man page made from them) say "leader", not the path it ran from.
  CLI::App app{"Run a command once across replicas, and inspect leader locks", "leader"};
  app.set_version_flag("--version", version_text);
  app.require_subcommand(1);
  Subcommand run_command = add_run_command(app);
  StatusOptions status_options;
  bool status_verbose = false;
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
  std::vector<Subcommand> subcommands = {run_command, add_list_command(app),
                                         add_release_command(app), add_observe_command(app)};
#ifdef LEADER_HAVE_SERVE
  subcommands.push_back(add_probe_command(app));
#endif
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
    status_options.verbosity = status_verbose ? 1 : 0;
    return status(status_options);
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
