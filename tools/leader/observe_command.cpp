#include "observe_command.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <stop_token>

#include "command_options.hpp"
#include "duration.hpp"
#include "exit_codes.hpp"
#include "holders_json.hpp"
#include "leader/campaign.hpp"
#include "leader/history.hpp"
#include "leader/names.hpp"
#include "leader/open.hpp"
#include "leader/uri.hpp"
#include "log.hpp"
#include "log_options.hpp"
#include "process_group.hpp"
#include "store_location.hpp"

namespace leader::cli {
namespace {

// The parsed options of `leader observe`.
struct ObserveOptions {
  std::string store;  // empty: $LEADER_STORE or the default SQLite file
  std::string lock;
  std::string interval_text = "1s";  // --interval, converted when run
  bool json = false;
  bool until_free = false;
  bool verbose = false;
};

// Bound of one inspect call.
constexpr Duration kObserveCallTimeout = std::chrono::seconds(5);

// The current UTC time as 2026-12-01T03:04:05.123Z.
std::string utc_now() { return format_utc(std::chrono::system_clock::now()); }

std::string as_text(const std::string& lock, const LockState& state) {
  std::string line = utc_now() + " " + lock + ": ";
  if (!state.held()) return line + "free";
  line += "held by ";
  bool first = true;
  for (const Holder& h : state.holders) {
    line += first ? "" : ", ";
    first = false;
    line += h.node_id + " (fencing token " + std::to_string(h.fencing_token);
    if (state.holders.size() > 1 || h.slot != 0) line += ", slot " + std::to_string(h.slot);
    line += ", expires in " + format_duration(h.expires_in) + ")";
  }
  return line;
}

std::string as_json(const std::string& lock, const LockState& state) {
  return nlohmann::json{
      {"time", utc_now()}, {"lock", lock}, {"held", state.held()}, {"holders", holders_json(state)}}
      .dump();
}

// Runs `leader observe`: 0 after SIGINT/SIGTERM/SIGHUP or, with --until-free, once the lock is
// free. Throws UsageError (64) and StoreFailure (69, 77, 78; also when a poll fails later).
int observe(const ObserveOptions& o) {
  SignalChannel signals;  // first: every thread started later inherits the blocked mask
  Log log(o.verbose ? 1 : 0);
  check_lock_option(o.lock, "--lock");
  Duration interval = parse_duration(o.interval_text, "--interval");
  if (interval <= Duration{0}) throw UsageError("--interval must be greater than 0");
  std::string shown;
  std::shared_ptr<LeaseStore> store = open_store(o.store, log, &shown);
  std::stop_source stop;
  SignalStop on_signal(signals, stop);
  try {
    observe_lock(*store, o.lock,
                 [&](const LockState& state) {
                   std::printf("%s\n",
                               (o.json ? as_json(o.lock, state) : as_text(o.lock, state)).c_str());
                   std::fflush(stdout);
                   return !(o.until_free && !state.held());
                 },
                 stop.get_token(), {.interval = interval, .call_timeout = kObserveCallTimeout});
  } catch (const BackendError& e) {
    throw store_failure("cannot read '" + o.lock + "' from store " + shown, e);
  }
  if (int sig = on_signal.received(); sig != 0)
    log.info("stopped by signal " + std::to_string(sig));
  return kExitOk;
}

}  // namespace

Subcommand add_observe_command(CLI::App& app) {
  auto o = std::make_shared<ObserveOptions>();
  auto* sub = app.add_subcommand("observe", "Print the holders of a lock as they change");
  sub->footer(R"(
One line (or one JSON object with --json) when observing starts and one per change of
holder (owner or fencing token). Watched stores: Redis, PostgreSQL, etcd, ZooKeeper, Consul,
Kubernetes (a change shows as the store notifies it; the lock is still re-read at the holders'
expiry and every 30 s). Polled stores: SQLite, MariaDB, DynamoDB, MongoDB, every --interval
(one inspect call each; see docs/campaign.md). Runs until
SIGINT, SIGTERM or SIGHUP (exit 0); with --until-free, exits 0 once the lock is seen free.

Exit codes: 0 stopped, 64 usage error, 69 store unavailable (also when a read fails),
77 store refused authentication, 78 store misconfigured.)");
  add_store_option(sub, o->store);
  sub->add_option("--lock", o->lock, "Lock name")->type_name("NAME")->required();
  sub->add_option("--interval", o->interval_text, "How often a store without a watch is polled")
      ->type_name("DURATION")
      ->capture_default_str();
  sub->add_flag("--json", o->json, "One JSON object per line");
  sub->add_flag("--until-free", o->until_free, "Exit once the lock is free");
  sub->add_flag("-v,--verbose", o->verbose, "Say which store is used");
  add_log_format_option(sub);
  return {sub,
          "Usage: leader observe [--store URI] --lock NAME [--interval 1s] [--json] "
          "[--until-free] [-v] [--log-format text|json]",
          [o] { return observe(*o); }};
}

}  // namespace leader::cli
