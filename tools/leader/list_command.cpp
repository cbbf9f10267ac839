// `leader list`: every lock with a live holder whose name starts with --prefix (or lies in a
// --tenant's scope), from leader::list_locks (the LockLister capability of the store).

#include "list_command.hpp"

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "command_options.hpp"
#include "exit_codes.hpp"
#include "holders_json.hpp"
#include "leader/errors.hpp"
#include "leader/lock_listing.hpp"
#include "leader/names.hpp"
#include "leader/open.hpp"
#include "leader/store.hpp"
#include "leader/uri.hpp"
#include "log.hpp"
#include "log_options.hpp"
#include "store_location.hpp"

namespace leader::cli {
namespace {

// Bound of the one list call.
constexpr Duration kListTimeout = std::chrono::seconds(10);

struct ListOptions {
  std::string store;
  std::string prefix;
  std::string tenant;
  bool json = false;
  bool verbose = false;
};

nlohmann::json to_json(const std::vector<LockState>& locks) {
  nlohmann::json out = nlohmann::json::array();
  for (const LockState& s : locks) {
    out.push_back({{"lock", s.lock}, {"holders", holders_json(s)}});
  }
  return out;
}

void print_text(const std::vector<LockState>& locks, const std::string& prefix) {
  if (locks.empty()) {
    std::printf("no held locks%s\n", prefix.empty() ? "" : (" under '" + prefix + "'").c_str());
    return;
  }
  std::size_t width = 4;
  for (const LockState& s : locks) width = std::max(width, s.lock.size());
  std::printf("%-*s  %4s  %-24s  %13s  %s\n", static_cast<int>(width), "LOCK", "SLOT", "NODE",
              "FENCING TOKEN", "EXPIRES IN");
  for (const LockState& s : locks)
    for (const Holder& h : s.holders)
      std::printf("%-*s  %4d  %-24s  %13llu  %s\n", static_cast<int>(width), s.lock.c_str(), h.slot,
                  h.node_id.c_str(), static_cast<unsigned long long>(h.fencing_token),
                  format_duration(h.expires_in).c_str());
}

int list(const ListOptions& o) {
  Log log(o.verbose ? 1 : 0);
  std::string prefix = o.prefix;
  if (!o.tenant.empty()) {
    try {
      validate_tenant_id(o.tenant);
    } catch (const InvalidArgument& e) {
      throw UsageError(std::string("--tenant: ") + e.what());
    }
    prefix = "tenant:" + o.tenant + ":" + o.prefix;
  }
  if (prefix.size() > kMaxLockNameLength)
    throw UsageError("--prefix is " + std::to_string(prefix.size()) +
                     " characters long; a lock name has at most " +
                     std::to_string(kMaxLockNameLength));
  StoreChoice choice = choose_store(o.store);
  std::string shown = redact_uri(choice.uri);
  std::vector<LockState> locks;
  try {
    shown = announce_store(choice, log);
    auto store = leader::open(choice.uri);
    locks = leader::list_locks(*store, prefix, Deadline::after(kListTimeout));
  } catch (const std::exception& e) {
    throw store_failure("cannot list locks in store " + shown, e);
  }
  if (o.json) {
    std::printf("%s\n", to_json(locks).dump().c_str());
  } else {
    print_text(locks, prefix);
  }
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace

Subcommand add_list_command(CLI::App& app) {
  auto o = std::make_shared<ListOptions>();
  auto* sub = app.add_subcommand("list", "List the held locks (and holders) under a prefix");
  sub->footer(
      "\nShows each lock with a live holder whose name starts with --prefix (all locks\n"
      "without it); --tenant T lists the locks of for_tenant(\"T\") (names tenant:T:...).\n"
      "Stores that cannot enumerate locks say so (exit 78).\n\n"
      "Exit codes: 0 listed (also when none is held), 64 usage error, 69 store unavailable,\n"
      "77 store refused authentication, 78 store misconfigured or listing not supported.");
  add_store_option(sub, o->store);
  sub->add_option("--prefix", o->prefix, "Only locks whose name starts with this")
      ->type_name("PREFIX");
  sub->add_option("--tenant", o->tenant, "Only the locks of this tenant")->type_name("TENANT");
  sub->add_flag("--json", o->json, "Print a JSON array");
  sub->add_flag("-v,--verbose", o->verbose, "Say which store is used");
  add_log_format_option(sub);
  return {sub, "Usage: leader list [--store URI] [--prefix PREFIX] [--tenant TENANT] [--json] [-v]",
          [o] { return list(*o); }};
}

}  // namespace leader::cli
