// `leader release --force --yes-i-know --lock NAME`: removes the live lease(s) of a lock that
// another process holds, for an operator whose holder is wedged. It uses the store's own release
// with the holder's owner token (from inspect), so it changes nothing else: the fencing counter
// of the lock is kept, and the next acquisition gets a token above every earlier one. The former
// holder's next renewal is refused (lease_lost): `leader run` then kills its command group.

#include "release_command.hpp"

#include <syslog.h>

#include <memory>

#include "command_options.hpp"
#include "exit_codes.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "leader/open.hpp"
#include "leader/store.hpp"
#include "leader/uri.hpp"
#include "log.hpp"
#include "log_options.hpp"
#include "store_location.hpp"

namespace leader::cli {
namespace {

constexpr Duration kReleaseTimeout = std::chrono::seconds(10);

struct ReleaseOptions {
  std::string store;
  std::string lock;
  bool force = false;
  bool confirmed = false;
  int slot = -1;  // -1: every holder
  int slots = 0;
  std::string node_id;
  bool verbose = false;
};

// An audit line on stderr (always shown) and in syslog (LOG_AUTH), whatever the verbosity.
void audit(const std::string& message) {
  std::string clean = without_secrets(message);
  write_log_line("warning", clean);
  ::openlog("leader", LOG_PID, LOG_AUTH);
  ::syslog(LOG_WARNING, "%s", clean.c_str());
  ::closelog();
}

int release(const ReleaseOptions& o) {
  if (!o.force)
    throw UsageError(
        "leader release only breaks a lock that another process holds (a holder releases its "
        "own lease when its command ends); to do that, type leader release --force "
        "--yes-i-know --lock " +
        (o.lock.empty() ? std::string("NAME") : o.lock));
  if (!o.confirmed)
    throw UsageError(
        "--force also needs --yes-i-know: the holder of '" + o.lock +
        "' may still be running and will be stopped at its next renewal, and another replica "
        "may start the same work at once; type leader release --force --yes-i-know --lock " +
        o.lock);
  check_lock_option(o.lock, "--lock");
  Log log(o.verbose ? 1 : 0);
  StoreChoice choice = choose_store(o.store);
  std::string shown = redact_uri(choice.uri);
  std::shared_ptr<LeaseStore> store;
  LockState state;
  try {
    shown = announce_store(choice, log);
    store = leader::open(choice.uri);
    state = store->inspect(o.lock, Deadline::after(kReleaseTimeout));
  } catch (const std::exception& e) {
    throw store_failure("cannot read '" + o.lock + "' from store " + shown, e);
  }
  std::vector<Holder> targets;
  bool group = o.slots > 0;
  for (const Holder& h : state.holders) {
    group |= h.slot > 0;
    if (o.slot >= 0 && h.slot != o.slot) continue;
    if (!o.node_id.empty() && h.node_id != o.node_id) continue;
    targets.push_back(h);
  }
  if (state.holders.size() > 1) group = true;
  if (group && o.slots == 0)
    throw UsageError("'" + o.lock +
                     "' is a group lock (slots): give --slots N as its holders do, e.g. "
                     "leader release --force --yes-i-know --lock " +
                     o.lock + " --slots 3");
  if (targets.empty()) {
    log.notice("'" + o.lock + "' has no live holder" +
               (o.slot >= 0 || !o.node_id.empty() ? " matching --slot/--node-id" : "") +
               "; nothing released");
    return kExitFree;
  }
  int released = 0;
  for (const Holder& h : targets) {
    Lease lease{.lock = o.lock,
                .owner = h.owner,
                .node_id = h.node_id,
                .fencing_token = h.fencing_token,
                .slot = h.slot,
                .slots = o.slots,
                .ttl = h.expires_in};
    LeaseStatus status = LeaseStatus::lost;
    try {
      status = store->release(lease, Duration{0}, Deadline::after(kReleaseTimeout));
    } catch (const std::exception& e) {
      throw store_failure("cannot release '" + o.lock + "' in store " + shown, e);
    }
    if (status == LeaseStatus::ok) {
      ++released;
      audit("force-released '" + o.lock + "' held by " + h.node_id + " (fencing token " +
            std::to_string(h.fencing_token) + ", slot " + std::to_string(h.slot) + ") in store " +
            shown +
            " at the operator's request (--force --yes-i-know); the "
            "next holder gets a higher fencing token; the former holder's next renewal fails");
    } else {
      log.notice("the lease of " + h.node_id + " on '" + o.lock +
                 "' had already ended; nothing to release");
    }
  }
  return released > 0 ? kExitOk : kExitFree;
}

}  // namespace

Subcommand add_release_command(CLI::App& app) {
  auto o = std::make_shared<ReleaseOptions>();
  auto* sub = app.add_subcommand(
      "release", "Break-glass: remove another process's lease on a lock (--force --yes-i-know)");
  sub->footer(
      "\nFor an operator whose lock holder is wedged. Removes the live lease(s) of --lock\n"
      "(or only --slot N / --node-id ID) with the holder's owner token, logs the action on\n"
      "stderr and to syslog (LOG_AUTH). The fencing counter is kept: the next holder gets a\n"
      "higher token, so a resource that checks tokens rejects the old holder's writes. The\n"
      "old holder's next renewal fails; leader run then kills its command (exit 75).\n\n"
      "Exit codes: 0 released, 3 nothing held, 64 usage error (also without --force or\n"
      "--yes-i-know), 69 store unavailable, 77 store refused authentication, 78 store\n"
      "misconfigured.");
  add_store_option(sub, o->store);
  sub->add_option("--lock", o->lock, "Lock name")->type_name("NAME")->required();
  sub->add_flag("--force", o->force, "Release a lease this process does not hold");
  sub->add_flag("--yes-i-know", o->confirmed,
                "Confirm: the holder may still run, and another replica may start at once");
  sub->add_option("--slot", o->slot, "Only the holder of this slot")->check(CLI::Range(0, 999));
  sub->add_option("--slots", o->slots, "Slots of a group lock, as its holders use")
      ->check(CLI::Range(1, 1000));
  sub->add_option("--node-id", o->node_id, "Only the holder with this node id")->type_name("ID");
  sub->add_flag("-v,--verbose", o->verbose, "Say which store is used");
  add_log_format_option(sub);
  return {sub,
          "Usage: leader release --force --yes-i-know [--store URI] --lock NAME [--slot N] "
          "[--slots N] [--node-id ID]",
          [o] { return release(*o); }};
}

}  // namespace leader::cli
