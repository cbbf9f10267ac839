#pragma once
/// @file subcommand.hpp
/// What a subcommand's add_<name>_command() hands back to main: its CLI11 app, its one-line
/// usage (shown with parse errors) and the function that runs it after parsing.

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace leader::cli {

/// A registered subcommand of `leader`.
struct Subcommand {
  CLI::App* app = nullptr;
  std::string usage;         ///< "Usage: leader list [--store URI] ..."
  std::function<int()> run;  ///< runs it; returns the exit code, may throw UsageError/StoreFailure
};

}  // namespace leader::cli
