#pragma once
/// @file release_command.hpp
/// `leader release --force`: the operator's break-glass removal of another process's lease.

#include "subcommand.hpp"

namespace leader::cli {

/// Registers `leader release` on `app`.
Subcommand add_release_command(CLI::App& app);

}  // namespace leader::cli
