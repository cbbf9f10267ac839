#pragma once
/// @file contract.hpp
/// The store contract suite as a kit (component `leader::testing`, GoogleTest): every case the
/// project's own stores pass, run against a store of yours. One line registers it:
///
///     #include <leader/testing/contract.hpp>
///     LEADER_STORE_CONTRACT(MyStore, [] { return my::open_store(); });
///
/// linked with `leader::testing` and `GTest::gtest_main`. What is not guaranteed: a factory alone
/// cannot pause a server or start processes that open the store, so the cases that need an outage
/// or other processes are skipped, each with a message naming what is missing; register a
/// Backend with LEADER_STORE_CONTRACT_BACKEND to run them too. The judged cases compare the
/// holder's stop signal with the instant a second client was really let in: they take several
/// lease units each: the suite runs for about a minute, longer on a networked store.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "leader/open.hpp"
#include "leader/store.hpp"
#include "leader/time.hpp"

namespace leader::contract {

/// How the suite reaches one backend. `open` is required; every other hook is optional, and a
/// case that needs a missing one is skipped with a message naming it.
struct Backend {
  /// Names the backend in test names (the third part of `Name/ContractTest.Case/name`).
  std::string name;
  /// A client of the backend. Each call may return a new client (connection) of the same
  /// backend or the same store object: every client of a case must see the others' leases.
  std::function<std::shared_ptr<LeaseStore>()> open;
  /// The URI other processes open (the multi-process cases, with `child`); empty: they skip.
  std::string uri{};
  /// Makes the backend unreachable or unresponsive for every client opened by `open` and `uri`
  /// (SIGSTOP of the server, a held exclusive lock, a closed proxy ...). Must return at once.
  /// Empty: the outage cases skip.
  std::function<void()> outage_begin{};
  /// Ends the outage; the backend serves requests again when it returns.
  std::function<void()> outage_end{};
  /// The lease time used by timing cases; stores whose expiry is coarse (ZooKeeper sessions)
  /// raise it. Every timing expectation in the suite scales with it.
  Duration lease_unit = std::chrono::milliseconds(1000);
  /// The program the multi-process cases start to open `uri` (the project's
  /// leader_contract_child, which links the project's stores); empty: they skip.
  std::string child{};
};

/// A Backend on `factory` alone, named `name`: the factory is called once per case (lazily) and
/// every client of that case uses the store it returned, so a private in-process store
/// (`leader::open("memory:")`) runs the suite too. No outage, URI or child: those cases skip.
Backend factory_backend(std::string name, std::function<std::shared_ptr<LeaseStore>()> factory);

/// `b`, unchanged; the registration macros pass every Backend through it, so that a program
/// registering one links the whole suite (a static library's unreferenced cases are dropped).
Backend registered(Backend b);

/// The fixture of every contract case: parameterized by the Backend.
class ContractTest : public ::testing::TestWithParam<Backend> {
 protected:
  /// The case's own client of the backend (opened on first use).
  std::shared_ptr<LeaseStore> store();
  /// A lock name unique to this test and run.
  std::string lock(const std::string& suffix = "");
  const Backend& backend() const { return GetParam(); }
  void SetUp() override;
  void TearDown() override;

 private:
  std::shared_ptr<LeaseStore> store_;
};

/// Names the backend in test output (instead of a byte dump).
inline void PrintTo(const Backend& b, std::ostream* os) { *os << b.name; }

}  // namespace leader::contract

/// Registers every contract case for the Backend `make_backend()` returns (called once, at
/// static initialization: it must do no I/O), as `Name/ContractTest.<case>/<backend name>`.
#define LEADER_STORE_CONTRACT_BACKEND(Name, ...)                                              \
  using ContractTest = ::leader::contract::ContractTest;                                      \
  INSTANTIATE_TEST_SUITE_P(                                                                   \
      Name, ContractTest, ::testing::Values(::leader::contract::registered((__VA_ARGS__)())), \
      [](const ::testing::TestParamInfo<::leader::contract::Backend>& i) { return i.param.name; })

/// Registers every contract case for the stores `factory` returns (a callable returning
/// std::shared_ptr<leader::LeaseStore>; see factory_backend), as `Name/ContractTest.<case>/Name`.
#define LEADER_STORE_CONTRACT(Name, ...)                                             \
  LEADER_STORE_CONTRACT_BACKEND(Name, [] {                                           \
    return ::leader::contract::factory_backend(                                      \
        #Name, std::function<std::shared_ptr<::leader::LeaseStore>()>(__VA_ARGS__)); \
  })
