#pragma once
/// @file parse_errors.hpp
/// CLI11's parse errors reworded to say what to type ("a subcommand is required: leader run ...").

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace leader::cli {

/// The message for a parse error of `leader <sub>` (sub "" when none was recognised).
/// `subcommands` are the names `leader` knows, for "unknown command" hints.
std::string explain_parse_error(const CLI::ParseError& error, const std::string& sub,
                                const std::vector<std::string>& subcommands);

}  // namespace leader::cli
