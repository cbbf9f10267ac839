#include "status_command.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "command_options.hpp"
#include "exit_codes.hpp"
#include "holders_json.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "leader/open.hpp"
#include "leader/store.hpp"
#include "leader/uri.hpp"
#include "log.hpp"
#include "store_location.hpp"

namespace leader::cli {
namespace {

// Bound of the one inspect call.
constexpr Duration kStatusTimeout = std::chrono::seconds(5);

nlohmann::json to_json(const LockState& state, int slots) {
  nlohmann::json out = {
      {"lock", state.lock}, {"held", state.held()}, {"holders", holders_json(state)}};
  if (slots > 0) {
    int active = static_cast<int>(state.holders.size());
    out["slots"] = slots;
    out["active"] = active;
    out["available"] = std::max(0, slots - active);
  }
  return out;
}

void print_text(const std::string& lock, const LockState& state, int slots) {
  int active = static_cast<int>(state.holders.size());
  if (slots > 0) {
    std::printf("%s: %d of %d slots held, %d available\n", lock.c_str(), active, slots,
                std::max(0, slots - active));
  } else {
    std::printf("%s: %s\n", lock.c_str(), state.held() ? "held" : "free");
  }
  for (const Holder& h : state.holders) {
    std::printf("  slot %d  node %s  fencing token %llu  expires in %s\n", h.slot,
                h.node_id.c_str(), static_cast<unsigned long long>(h.fencing_token),
                format_duration(h.expires_in).c_str());
  }
}

}  // namespace

int status(const StatusOptions& o) {
  Log log(o.verbosity);
  check_lock_option(o.lock, "--lock");
  StoreChoice choice = choose_store(o.store);
  std::string shown = redact_uri(choice.uri);
  LockState state;
  try {
    shown = announce_store(choice, log);
    auto store = leader::open(choice.uri);
    state = store->inspect(o.lock, Deadline::after(kStatusTimeout));
  } catch (const std::exception& e) {
    throw store_failure("cannot read '" + o.lock + "' from store " + shown, e);
  }
  if (state.lock.empty()) state.lock = o.lock;
  if (o.json) {
    std::printf("%s\n", to_json(state, o.slots).dump().c_str());
  } else {
    print_text(o.lock, state, o.slots);
  }
  std::fflush(stdout);
  return state.held() ? kExitOk : kExitFree;
}

}  // namespace leader::cli
