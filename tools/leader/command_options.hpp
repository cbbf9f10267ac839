#pragma once
/// @file command_options.hpp
/// What the subcommands' options share: --store (store_location.hpp picks the store from it) and
/// the check of a lock name given as an option.

#include <CLI/CLI.hpp>
#include <string>

#include "exit_codes.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "store_location.hpp"

namespace leader::cli {

/// Adds --store to `sub`, filling `store`; an empty or memory: URI is a usage error (64), not a
/// silent fallback.
inline CLI::Option* add_store_option(CLI::App* sub, std::string& store) {
  return sub->add_option("--store", store, "Store URI (default: $LEADER_STORE, else SQLite file)")
      ->check(
          CLI::Validator([](std::string& uri) { return store_uri_problem(uri, "--store"); }, "URI"))
      ->type_name("URI");
}

/// Refuses `name`, given to option `flag` (e.g. "--lock"), when it is not a valid lock name.
inline void check_lock_option(const std::string& name, const char* flag) {
  try {
    validate_lock_name(name);
  } catch (const InvalidArgument& e) {
    throw UsageError(std::string(flag) + ": " + e.what());
  }
}

}  // namespace leader::cli
