// Status names, the thread's last error, the version, and the exception-to-status mapping.

#include <new>
#include <stdexcept>

#include "handles.hpp"

namespace leader::capi {
namespace {

thread_local std::string t_last_error;

}  // namespace

leader_status fail(leader_status status, std::string message) {
  t_last_error = std::move(message);
  return status;
}

leader_status status_of(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::unavailable:
      return LEADER_UNAVAILABLE;
    case ErrorCode::deadline_exceeded:
      return LEADER_DEADLINE_EXCEEDED;
    case ErrorCode::lease_lost:
      return LEADER_LEASE_LOST;
    case ErrorCode::failed_precondition:
      return LEADER_FAILED_PRECONDITION;
    case ErrorCode::invalid_argument:
      return LEADER_STORE_REJECTED;
    case ErrorCode::internal:
      return LEADER_INTERNAL;
  }
  return LEADER_INTERNAL;
}

leader_status from_current_exception() noexcept {
  try {
    throw;
  } catch (const BackendError& e) {
    return fail(status_of(e.code()), e.what());
  } catch (const InvalidArgument& e) {
    return fail(LEADER_INVALID_ARGUMENT, e.what());
  } catch (const OperationCancelled& e) {
    return fail(LEADER_CANCELLED, e.what());
  } catch (const std::bad_alloc&) {
    t_last_error.clear();  // no room for a message
    return LEADER_NO_MEMORY;
  } catch (const std::logic_error& e) {
    return fail(LEADER_BAD_STATE, e.what());
  } catch (const std::exception& e) {
    return fail(LEADER_INTERNAL, e.what());
  } catch (...) {
    return fail(LEADER_INTERNAL, "unknown exception");
  }
}

}  // namespace leader::capi

extern "C" {

const char* leader_status_name(leader_status status) {
  switch (status) {
    case LEADER_OK:
      return "ok";
    case LEADER_NOT_ELECTED:
      return "not_elected";
    case LEADER_CANCELLED:
      return "cancelled";
    case LEADER_ACTION_FAILED:
      return "action_failed";
    case LEADER_INVALID_ARGUMENT:
      return "invalid_argument";
    case LEADER_UNAVAILABLE:
      return "unavailable";
    case LEADER_DEADLINE_EXCEEDED:
      return "deadline_exceeded";
    case LEADER_LEASE_LOST:
      return "lease_lost";
    case LEADER_FAILED_PRECONDITION:
      return "failed_precondition";
    case LEADER_STORE_REJECTED:
      return "store_rejected";
    case LEADER_INTERNAL:
      return "internal";
    case LEADER_NO_MEMORY:
      return "no_memory";
    case LEADER_BAD_STATE:
      return "bad_state";
  }
  return "unknown";
}

const char* leader_last_error(void) { return leader::capi::t_last_error.c_str(); }

const char* leader_version(void) { return LEADER_VERSION_STRING; }

}  // extern "C"
