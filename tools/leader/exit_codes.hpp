#pragma once
/// @file exit_codes.hpp
/// Exit codes of the `leader` command (sysexits-style, plus the command's own status).

#include <exception>
#include <stdexcept>
#include <string>

namespace leader::cli {

/// The command ran and exited 0, or another replica held the lock (the default skip code).
inline constexpr int kExitOk = 0;
/// `leader status`: the lock is free.
inline constexpr int kExitFree = 3;
/// Bad usage: unknown option, bad duration or lock name, impossible --grace (EX_USAGE).
inline constexpr int kExitUsage = 64;
/// The store could not be reached or timed out (EX_UNAVAILABLE).
inline constexpr int kExitUnavailable = 69;
/// An internal error of leader itself, e.g. fork failed (EX_OSERR).
inline constexpr int kExitOsError = 71;
/// The store refused authentication or authorisation (EX_NOPERM).
inline constexpr int kExitNoPermission = 77;
/// The store is misconfigured: a bad URI or URI parameter, an unknown scheme, a store not built
/// into this binary, a missing schema (EX_CONFIG).
inline constexpr int kExitConfig = 78;
/// The lease was lost while the command ran; its process group was terminated (EX_TEMPFAIL).
inline constexpr int kExitLeaseLost = 75;
/// The command exists but could not be executed (as in the shell).
inline constexpr int kExitCannotExecute = 126;
/// The command was not found (as in the shell).
inline constexpr int kExitNotFound = 127;
/// 128 + N: the command was killed by signal N (or leader was, while it waited for the lock).
inline constexpr int kExitSignalBase = 128;

/// A usage mistake found after parsing (exit 64 with the message and the usage line).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The store cannot be used: a one-line reason and the exit code of its cause (69, 77 or 78).
class StoreFailure : public std::runtime_error {
 public:
  StoreFailure(const std::string& message, int exit_code)
      : std::runtime_error(message), exit_code_(exit_code) {}
  /// kExitUnavailable, kExitNoPermission or kExitConfig.
  [[nodiscard]] int exit_code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

/// The store cannot be reached (exit 69 with a one-line reason).
class StoreUnavailable : public StoreFailure {
 public:
  explicit StoreUnavailable(const std::string& message) : StoreFailure(message, kExitUnavailable) {}
};

/// The exit code for a failure of the store (or of opening it), by cause: leader::InvalidArgument
/// (bad URI, unknown scheme, store not built in) and BackendError invalid_argument /
/// failed_precondition -> 78, unless the message says authentication or authorisation was
/// refused -> 77; unavailable, deadline_exceeded, and anything else -> 69.
int exit_code_for_store_error(const std::exception& error);

/// A StoreFailure whose message is `context` + ": " + the error's, with its exit code.
StoreFailure store_failure(const std::string& context, const std::exception& error);

}  // namespace leader::cli
