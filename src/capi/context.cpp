// The action's context: its lease's token, slot and names, and the stop signal as a flag and a
// file descriptor.

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "handles.hpp"

using leader::capi::fail;

extern "C" {

uint64_t leader_context_fencing_token(const leader_context* ctx) {
  return ctx != nullptr ? ctx->ctx->fencing_token() : 0;
}

int leader_context_slot(const leader_context* ctx) { return ctx != nullptr ? ctx->ctx->slot() : 0; }

const char* leader_context_lock(const leader_context* ctx) {
  return ctx != nullptr ? ctx->ctx->lock_name().c_str() : "";
}

const char* leader_context_node_id(const leader_context* ctx) {
  return ctx != nullptr ? ctx->ctx->node_id().c_str() : "";
}

bool leader_context_stopped(const leader_context* ctx) {
  return ctx == nullptr || ctx->ctx->stop_token().stop_requested();
}

int leader_context_stop_fd(leader_context* ctx) {
  if (ctx == nullptr) {
    fail(LEADER_INVALID_ARGUMENT, "leader_context_stop_fd: ctx is NULL");
    return -1;
  }
  std::lock_guard lock(ctx->mu);
  if (ctx->fd >= 0) return ctx->fd;
  const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) {
    fail(LEADER_INTERNAL, std::string("leader_context_stop_fd: eventfd: ") + std::strerror(errno));
    return -1;
  }
  ctx->fd = fd;
  try {
    // Runs at once when the stop already fired: the descriptor is then readable from the start.
    ctx->wake.emplace(ctx->ctx->stop_token(), leader_context::Wake{fd});
  } catch (...) {
    ::close(fd);
    ctx->fd = -1;
    leader::capi::from_current_exception();
    return -1;
  }
  return fd;
}

int64_t leader_context_remaining_ms(const leader_context* ctx) {
  if (ctx == nullptr) return 0;
  const auto left = ctx->ctx->deadline() - std::chrono::steady_clock::now();
  return std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(left).count());
}

leader_status leader_context_extend(leader_context* ctx, int64_t lease_ms) {
  if (ctx == nullptr) return fail(LEADER_INVALID_ARGUMENT, "leader_context_extend: ctx is NULL");
  return leader::capi::guarded([&] {
    if (ctx->ctx->extend(std::chrono::milliseconds(lease_ms))) return LEADER_OK;
    return fail(LEADER_LEASE_LOST, "lock '" + ctx->ctx->lock_name() + "': the lease was lost");
  });
}

}  // extern "C"
