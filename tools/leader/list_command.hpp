#pragma once
/// @file list_command.hpp
/// `leader list`: the locks with live holders under a prefix or a tenant.

#include "subcommand.hpp"

namespace leader::cli {

/// Registers `leader list` on `app`.
Subcommand add_list_command(CLI::App& app);

}  // namespace leader::cli
