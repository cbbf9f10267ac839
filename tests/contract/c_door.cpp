// The C interface (leader.h) as a door of the judged suite: the action runs through
// leader_run_if_leader on a C handle of the same elector, and the C stop descriptor is checked
// against the engine's stop signal (readable once the stop fired). Linked into the project's own
// contract programs (not into the installed kit), which registers it at start-up.

#include <poll.h>

#include <exception>
#include <optional>
#include <stdexcept>

#include "capi/handles.hpp"
#include "doors.hpp"

namespace leader::contract {
namespace {

struct Call {
  std::function<void(LeaderContext&)>* action;
  std::optional<LeaseInfo> lease;
  std::exception_ptr error;
};

int run_action(leader_context* ctx, void* user) {
  auto* call = static_cast<Call*>(user);
  call->lease = ctx->ctx->lease();
  const int fd = leader_context_stop_fd(ctx);
  try {
    if (fd < 0) throw std::runtime_error(std::string("no stop descriptor: ") + leader_last_error());
    (*call->action)(*ctx->ctx);
    // The C caller's view of the stop signal: once the engine's fired, the descriptor is readable.
    if (ctx->ctx->stop_token().stop_requested()) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 1000) != 1 || !leader_context_stopped(ctx))
        throw std::runtime_error("the stop signal fired but the C stop descriptor stayed silent");
    }
    return 0;
  } catch (...) {
    call->error = std::current_exception();
    return 1;
  }
}

RunResult<void> c_door(const LeaderElector& e, const std::string& lock,
                       std::function<void(LeaderContext&)> action,
                       const std::shared_future<void>&) {
  leader_elector handle{std::variant<LeaderElector, LeaderGroupElector>(std::in_place_index<0>, e)};
  Call call{&action, std::nullopt, nullptr};
  const leader_status s =
      leader_run_if_leader(&handle, lock.c_str(), run_action, &call, nullptr, nullptr);
  switch (s) {
    case LEADER_OK:
      return Elected<void>{*call.lease};
    case LEADER_ACTION_FAILED:
      return ActionFailed{call.error, *call.lease};
    case LEADER_NOT_ELECTED:
      return Skipped{SkipReason::contention, leader_last_error()};
    case LEADER_CANCELLED:
      return Skipped{SkipReason::cancelled, leader_last_error()};
    case LEADER_LEASE_LOST:
      return Skipped{SkipReason::lease_lost, leader_last_error()};
    default:
      throw std::runtime_error(std::string("leader_run_if_leader: ") + leader_status_name(s) +
                               ": " + leader_last_error());
  }
}

[[maybe_unused]] const bool registered = register_door({"c", c_door, false});

}  // namespace
}  // namespace leader::contract
