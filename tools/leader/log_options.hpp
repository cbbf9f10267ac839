#pragma once
/// @file log_options.hpp
/// The logging options every subcommand takes: --log-format text|json (or $LEADER_LOG_FORMAT).

#include <CLI/CLI.hpp>
#include <string>

#include "log.hpp"

namespace leader::cli {

/// Adds --log-format to `sub`; the format takes effect as soon as the option is parsed.
inline CLI::Option* add_log_format_option(CLI::App* sub) {
  return sub
      ->add_option_function<std::string>(
          "--log-format",
          [](const std::string& name) {
            if (auto format = parse_log_format(name)) set_log_format(*format);
          },
          "Log lines on stderr as text or json (one object per line); default text")
      ->check(CLI::IsMember({"text", "json"}))
      ->envname("LEADER_LOG_FORMAT")
      ->type_name("text|json");
}

}  // namespace leader::cli
