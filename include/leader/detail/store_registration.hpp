#pragma once
/// @file store_registration.hpp
/// LEADER_REGISTER_STORE: the one declaration a store's register.cpp makes. It registers the
/// store's URI schemes with leader::open() at static-initialisation time and defines the C symbol
/// `leader_store_<name>_anchor` that the component's link option (-u, cmake/LeaderStore.cmake and
/// leader-<name>.pc) references, so a static link never drops the registration. `<name>` is the
/// name given to leader_add_store in the store's CMakeLists.txt.

#include <initializer_list>
#include <string_view>

#include "leader/open.hpp"

namespace leader::detail {

/// Registers `factory` under every scheme of `schemes`; returns true (for a static initialiser).
inline bool register_schemes(std::initializer_list<std::string_view> schemes,
                             const StoreFactory& factory) {
  for (std::string_view scheme : schemes) register_store(std::string(scheme), factory);
  return true;
}

}  // namespace leader::detail

/// Registers `factory` (a StoreFactory) for the URI schemes that follow (string literals) and
/// defines the link anchor of store component `name`. Use once, at namespace scope, in one .cpp.
// NOLINTBEGIN(bugprone-macro-parentheses): `name` is pasted into identifiers.
#define LEADER_REGISTER_STORE(name, factory, ...)                                         \
  extern "C" {                                                                            \
  extern const int leader_store_##name##_anchor;                                          \
  const int leader_store_##name##_anchor = 0;                                             \
  }                                                                                       \
  namespace {                                                                             \
  [[maybe_unused]] const bool leader_store_##name##_registered =                          \
      ::leader::detail::register_schemes({__VA_ARGS__}, ::leader::StoreFactory(factory)); \
  }
// NOLINTEND(bugprone-macro-parentheses)
