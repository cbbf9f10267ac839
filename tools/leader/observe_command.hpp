#pragma once
/// @file observe_command.hpp
/// `leader observe`: print the holders of a lock each time they change, until a signal (or, with
/// --until-free, until the lock is seen free). Polls leader::observe_lock (inspect() every
/// --interval); see docs/campaign.md for its cost.

#include "subcommand.hpp"

namespace leader::cli {

/// Registers `leader observe` on `app`.
Subcommand add_observe_command(CLI::App& app);

}  // namespace leader::cli
