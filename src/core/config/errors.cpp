#include "leader/errors.hpp"

#include <string>

namespace leader {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::unavailable:
      return "unavailable";
    case ErrorCode::deadline_exceeded:
      return "deadline_exceeded";
    case ErrorCode::lease_lost:
      return "lease_lost";
    case ErrorCode::failed_precondition:
      return "failed_precondition";
    case ErrorCode::invalid_argument:
      return "invalid_argument";
    case ErrorCode::internal:
      return "internal";
  }
  return "unknown";
}

BackendError::BackendError(ErrorCode code, std::string store, const std::string& message)
    : Error(store + " store: " + std::string(to_string(code)) + ": " + message),
      code_(code),
      store_(std::move(store)) {}

}  // namespace leader
