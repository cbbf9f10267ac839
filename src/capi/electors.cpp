// Stores, electors and cancellation sources.

#include <chrono>

#include "handles.hpp"

namespace {

using leader::capi::fail;
using leader::capi::guarded;
using Ms = std::chrono::milliseconds;

leader::ElectionOptions election_options(const leader_options& o) {
  leader::ElectionOptions e;
  e.wait_time = Ms(o.wait_ms);
  e.lease_time = Ms(o.lease_ms);
  e.min_lease_time = Ms(o.min_lease_ms);
  e.safety_margin = Ms(o.safety_margin_ms);
  e.call_timeout = Ms(o.call_timeout_ms);
  e.auto_extend = o.auto_extend;
  e.fair = o.fair;
  e.reentrant = o.reentrant;
  if (o.node_id != nullptr) e.node_id = o.node_id;
  switch (o.on_backend_error) {
    case LEADER_BACKEND_ERROR_RETURN:
      e.on_backend_error = leader::OnBackendError::rethrow;
      break;
    case LEADER_BACKEND_ERROR_SKIP:
      e.on_backend_error = leader::OnBackendError::skip;
      break;
    case LEADER_BACKEND_ERROR_FAIL_OPEN:
      e.on_backend_error = leader::OnBackendError::fail_open;
      break;
    default:
      throw leader::InvalidArgument("leader_options.on_backend_error = " +
                                    std::to_string(static_cast<int>(o.on_backend_error)) +
                                    " is not a leader_on_backend_error");
  }
  return e;
}

}  // namespace

extern "C" {

leader_status leader_store_open(const char* uri, leader_store** out) {
  if (out == nullptr) return fail(LEADER_INVALID_ARGUMENT, "leader_store_open: out is NULL");
  *out = nullptr;
  if (uri == nullptr) return fail(LEADER_INVALID_ARGUMENT, "leader_store_open: uri is NULL");
  return guarded([&] {
    *out = new leader_store{leader::open(uri)};
    return LEADER_OK;
  });
}

void leader_store_close(leader_store* store) { delete store; }

void leader_options_init(leader_options* options) {
  if (options == nullptr) return;
  const leader::ElectionOptions d;
  *options = leader_options{};
  options->struct_size = sizeof(leader_options);
  options->wait_ms = std::chrono::duration_cast<Ms>(d.wait_time).count();
  options->lease_ms = std::chrono::duration_cast<Ms>(d.lease_time).count();
  options->min_lease_ms = std::chrono::duration_cast<Ms>(d.min_lease_time).count();
  options->safety_margin_ms = std::chrono::duration_cast<Ms>(d.safety_margin).count();
  options->call_timeout_ms = std::chrono::duration_cast<Ms>(d.call_timeout).count();
  options->auto_extend = d.auto_extend;
  options->fair = d.fair;
  options->reentrant = d.reentrant;
  options->node_id = nullptr;
  options->on_backend_error = LEADER_BACKEND_ERROR_RETURN;
  options->max_leaders = 0;
}

leader_status leader_elector_new(leader_store* store, const leader_options* options,
                                 leader_elector** out) {
  if (out == nullptr) return fail(LEADER_INVALID_ARGUMENT, "leader_elector_new: out is NULL");
  *out = nullptr;
  if (store == nullptr) return fail(LEADER_INVALID_ARGUMENT, "leader_elector_new: store is NULL");
  leader_options defaults;
  leader_options_init(&defaults);
  if (options != nullptr && options->struct_size != sizeof(leader_options))
    return fail(LEADER_INVALID_ARGUMENT,
                "leader_elector_new: options->struct_size is " +
                    std::to_string(options->struct_size) + ", not sizeof(leader_options) = " +
                    std::to_string(sizeof(leader_options)) + " (call leader_options_init)");
  const leader_options& o = options != nullptr ? *options : defaults;
  if (o.max_leaders < 0)
    return fail(LEADER_INVALID_ARGUMENT,
                "leader_options.max_leaders = " + std::to_string(o.max_leaders) +
                    " breaks the rule: 0 (one leader) or N >= 1");
  return guarded([&] {
    leader::ElectionOptions e = election_options(o);
    if (o.max_leaders == 0) {
      *out = new leader_elector{std::variant<leader::LeaderElector, leader::LeaderGroupElector>(
          std::in_place_index<0>, store->store, std::move(e))};
    } else {
      *out = new leader_elector{std::variant<leader::LeaderElector, leader::LeaderGroupElector>(
          std::in_place_index<1>, store->store,
          leader::GroupOptions{.election = std::move(e), .max_leaders = o.max_leaders})};
    }
    return LEADER_OK;
  });
}

void leader_elector_free(leader_elector* elector) { delete elector; }

leader_cancel* leader_cancel_new(void) { return new (std::nothrow) leader_cancel{}; }

void leader_cancel_request(leader_cancel* cancel) {
  if (cancel != nullptr) cancel->source.request_stop();
}

bool leader_cancel_requested(const leader_cancel* cancel) {
  return cancel != nullptr && cancel->source.stop_requested();
}

void leader_cancel_free(leader_cancel* cancel) { delete cancel; }

}  // extern "C"
