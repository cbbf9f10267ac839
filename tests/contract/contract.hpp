#pragma once
// The contract every store passes (DESIGN.md section 4), written once and parameterized by a
// Backend. A store adds one file tests/contract/stores/<store>.cpp that defines its Backend and
// calls LEADER_CONTRACT_BACKEND; CMake builds the binary contract_<store> for every built store.

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "leader/leader.hpp"

namespace leader::contract {

/// How the suite reaches one backend. Every hook is required unless noted.
struct Backend {
  std::string name;
  /// A new client (connection) of the same backend; each call is an independent client.
  std::function<std::shared_ptr<LeaseStore>()> open;
  /// The URI child processes open (multi-process cases); empty for in-process-only stores.
  std::string uri;
  /// Makes the backend unreachable or unresponsive for every client opened by `open` and `uri`
  /// (SIGSTOP of the server, a held exclusive lock, a closed proxy ...). Must return at once.
  std::function<void()> outage_begin;
  /// Ends the outage; the backend serves requests again when it returns.
  std::function<void()> outage_end;
  /// The lease time used by timing cases; stores whose expiry is coarse (ZooKeeper sessions)
  /// raise it. Every timing expectation in the suite scales with it.
  Duration lease_unit = std::chrono::milliseconds(1000);
};

/// `store` after one call with a generous deadline, so that its first connection (TCP, login,
/// schema check, prepared statements: ~10 ms on an idle machine, seen past 600 ms on the loaded
/// 2-core CI machine) is open before a case's short call timeouts count. For the SQL stores, whose
/// connections are the costly ones. Best effort: an error here shows up again in the case itself.
std::shared_ptr<LeaseStore> warmed(std::shared_ptr<LeaseStore> store);

class ContractTest : public ::testing::TestWithParam<Backend> {
 protected:
  std::shared_ptr<LeaseStore> store();
  /// A lock name unique to this test and run.
  std::string lock(const std::string& suffix = "");
  const Backend& backend() const { return GetParam(); }
  void TearDown() override;

 private:
  std::shared_ptr<LeaseStore> store_;
};

/// RAII outage: begins in the constructor, ends in the destructor (also on assertion failure).
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

/// Names the backend in test output (instead of a byte dump).
inline void PrintTo(const Backend& b, std::ostream* os) { *os << b.name; }

/// Path of the leader_contract_child binary (set by CMake).
std::string child_binary();

}  // namespace leader::contract

/// Registers a backend: LEADER_CONTRACT_BACKEND(Sqlite, make_sqlite_backend) where
/// `leader::contract::Backend make_sqlite_backend()` builds it lazily (no I/O at registration).
#define LEADER_CONTRACT_BACKEND(Name, make)              \
  using ContractTest = ::leader::contract::ContractTest; \
  INSTANTIATE_TEST_SUITE_P(                              \
      Name, ContractTest, ::testing::Values(make()),     \
      [](const ::testing::TestParamInfo<::leader::contract::Backend>& i) { return i.param.name; })
