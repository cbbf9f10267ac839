#pragma once
/// @file store_registration.hpp
/// LEADER_REGISTER_STORE: the one declaration a store's register.cpp makes. It registers the
/// store's factory with leader::open() at static-initialisation time, under the URI schemes the
/// store declares once, in its CMakeLists.txt (`leader_add_store(<name> SCHEMES ...)`,
/// cmake/LeaderStore.cmake), and defines the C symbol `leader_store_<name>_anchor` that the
/// component's link option (-u, leader-<name>.pc) references, so a static link never drops the
/// registration. A SQL store adds LEADER_REGISTER_HISTORY_SINK for its history sink, in the same
/// file. Code outside this project registers with leader::register_store() instead.

#include <string_view>
#include <vector>

#include "leader/history.hpp"
#include "leader/open.hpp"

namespace leader::detail {

/// The URI schemes store component `component` declares (SCHEMES of its leader_add_store), built
/// into this program or not; empty for a name no store declares.
[[nodiscard]] std::vector<std::string_view> store_schemes(std::string_view component);

/// Registers `factory` with leader::open() under every scheme of store component `component`;
/// returns true (for a static initialiser). Throws std::logic_error when it declares no scheme.
bool register_store_schemes(std::string_view component, const StoreFactory& factory);

/// Registers `factory` with leader::open_history() under every scheme of store component
/// `component`; returns true. Throws std::logic_error when it declares no scheme.
bool register_history_schemes(std::string_view component, const HistoryFactory& factory);

}  // namespace leader::detail

/// Registers `factory` (a StoreFactory) for the URI schemes of store component `name` (the name
/// given to leader_add_store) and defines its link anchor. Use once, at namespace scope, in the
/// store's register.cpp.
// NOLINTBEGIN(bugprone-macro-parentheses): `name` is pasted into identifiers.
#define LEADER_REGISTER_STORE(name, factory)                                            \
  extern "C" {                                                                          \
  extern const int leader_store_##name##_anchor;                                        \
  const int leader_store_##name##_anchor = 0;                                           \
  }                                                                                     \
  namespace {                                                                           \
  [[maybe_unused]] const bool leader_store_##name##_registered =                        \
      ::leader::detail::register_store_schemes(#name, ::leader::StoreFactory(factory)); \
  }

/// Registers `factory` (a HistoryFactory) with leader::open_history() for the URI schemes of
/// store component `name`. Use at most once, next to LEADER_REGISTER_STORE.
#define LEADER_REGISTER_HISTORY_SINK(name, factory)                                         \
  namespace {                                                                               \
  [[maybe_unused]] const bool leader_history_##name##_registered =                          \
      ::leader::detail::register_history_schemes(#name, ::leader::HistoryFactory(factory)); \
  }
// NOLINTEND(bugprone-macro-parentheses)
