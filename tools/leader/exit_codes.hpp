#pragma once
/// @file exit_codes.hpp
/// Exit codes of the `leader` command (sysexits-style, plus the command's own status).

#include <stdexcept>

namespace leader::cli {

/// The command ran and exited 0, or another replica held the lock (the default skip code).
inline constexpr int kExitOk = 0;
/// `leader status`: the lock is free.
inline constexpr int kExitFree = 3;
/// Bad usage: unknown option, bad duration or lock name, impossible --grace (EX_USAGE).
inline constexpr int kExitUsage = 64;
/// The store could not be opened or reached, or failed while acquiring (EX_UNAVAILABLE).
inline constexpr int kExitUnavailable = 69;
/// An internal error of leader itself, e.g. fork failed (EX_OSERR).
inline constexpr int kExitOsError = 71;
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

/// The store cannot be used (exit 69 with a one-line reason).
class StoreUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace leader::cli
