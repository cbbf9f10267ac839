#pragma once
/// @file errors.hpp
/// Typed errors. Contention is never an error: it is `Skipped`. Programmer and configuration
/// mistakes throw `InvalidArgument`; backend failures throw `BackendError` with a code that says
/// how the caller should react (the codes follow absl::Status).

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace leader {

/// Base class of every exception this library throws itself.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A bad lock name, option, URI or argument; the message names the value and the rule it broke.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

/// How a caller should react to a backend failure.
enum class ErrorCode {
  unavailable,          ///< transient: the store could not be reached; retrying may help
  deadline_exceeded,    ///< the call ran out of time; its outcome is unknown (lease unconfirmed)
  lease_lost,           ///< the lease is no longer ours: stop the work now
  failed_precondition,  ///< misconfiguration (auth, schema, permissions): do not retry
  invalid_argument,     ///< the store rejected a value as invalid
  internal,             ///< a protocol or server error that fits no other code
};

/// The lower-case name of a code, e.g. "deadline_exceeded".
std::string_view to_string(ErrorCode code) noexcept;

/// A failure of the backend store; `code()` says how to react, `store()` names the store scheme.
class BackendError : public Error {
 public:
  BackendError(ErrorCode code, std::string store, const std::string& message);
  /// How the caller should react.
  [[nodiscard]] ErrorCode code() const noexcept { return code_; }
  /// The scheme of the store that failed, e.g. "redis".
  [[nodiscard]] const std::string& store() const noexcept { return store_; }

 private:
  ErrorCode code_;
  std::string store_;
};

/// A grant too short for the explicit safety margin (ElectionOptions::safety_margin), e.g. a
/// ZooKeeper server that caps session timeouts below the asked lease_time. The elector released
/// the lease at once: nothing ran under it. The caller's options do not fit this store; retrying
/// does not help. code() is failed_precondition.
class GrantTooShort : public BackendError {
 public:
  GrantTooShort(std::string store, const std::string& message)
      : BackendError(ErrorCode::failed_precondition, std::move(store), message) {}
};

}  // namespace leader
