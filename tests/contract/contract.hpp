#pragma once
// The contract every store passes (DESIGN.md section 4), written once and parameterized by a
// Backend (include/leader/testing/contract.hpp, installed as the leader::testing kit). A project
// store adds one file tests/contract/stores/<store>.cpp that defines its Backend and calls
// LEADER_CONTRACT_BACKEND; CMake builds the binary contract_<store> for every built store. This
// header adds what the cases share beyond the installed one.

#include <memory>
#include <string>
#include <utility>

#include "leader/leader.hpp"
#include "leader/testing/contract.hpp"

namespace leader::contract {

/// `store` after one call with a generous deadline, so that its first connection (TCP, login,
/// schema check, prepared statements: ~10 ms on an idle machine, seen past 600 ms on the loaded
/// 2-core CI machine) is open before a case's short call timeouts count. For the SQL stores, whose
/// connections are the costly ones. Best effort: an error here shows up again in the case itself.
std::shared_ptr<LeaseStore> warmed(std::shared_ptr<LeaseStore> store);

/// RAII outage: begins in the constructor, ends in the destructor (also on assertion failure).
/// Only in cases that checked LEADER_CONTRACT_NEEDS(outage).
struct Outage {
  explicit Outage(const Backend& b);
  ~Outage();
  void end();
  Outage(const Outage&) = delete;
  Outage& operator=(const Outage&) = delete;

 private:
  const Backend& b_;
  bool active_ = true;
};

/// What a case needs beyond `Backend::open`.
enum class Need {
  outage,     ///< outage_begin / outage_end
  processes,  ///< uri and child: other processes that open the backend
};

/// Why `b` cannot run a case that needs `need` (a sentence naming what is missing), or "".
std::string missing(const Backend& b, Need need);

/// `b` with `child` as its child program.
inline Backend with_child(Backend b, std::string child) {
  b.child = std::move(child);
  return b;
}

}  // namespace leader::contract

/// Skips the running case, naming what is missing, when the backend lacks `need` (a Need).
#define LEADER_CONTRACT_NEEDS(need)                                               \
  if (const std::string leader_missing =                                          \
          ::leader::contract::missing(backend(), ::leader::contract::Need::need); \
      !leader_missing.empty())                                                    \
  GTEST_SKIP() << leader_missing

/// Registers a project store's Backend (`make()` builds it, with no I/O) with the child program
/// of this build (LEADER_CONTRACT_CHILD, set by CMake) for the multi-process cases.
#define LEADER_CONTRACT_BACKEND(Name, make) \
  LEADER_STORE_CONTRACT_BACKEND(            \
      Name, [] { return ::leader::contract::with_child(make(), LEADER_CONTRACT_CHILD); })

/// Ends every file of contract cases, `file` being its name without `_test.cpp`: the anchor that
/// the generated case_files.cpp references, so a program linking the static kit keeps the file's
/// cases. A case file without it fails the link of every contract program.
// NOLINTBEGIN(bugprone-macro-parentheses): `file` names a variable.
#define LEADER_CONTRACT_CASE_FILE(file)    \
  namespace leader::contract::case_files { \
  extern const int file;                   \
  const int file = 0;                      \
  }
// NOLINTEND(bugprone-macro-parentheses)
