#pragma once
/// @file serve_options.hpp
/// The options of `leader serve`: their CLI definition, and the checks that turn their text into
/// values (listen address and token, durations, lock names). Every check throws UsageError (64).

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

#include "leader/time.hpp"

namespace leader::cli {

/// Options of `leader serve`, as given on the command line.
struct ServeOptions {
  std::string store;
  std::string listen = "127.0.0.1:9464";
  bool allow_remote = false;           ///< required to listen on a non-loopback address
  std::string token_file;              ///< bearer token; required with allow_remote
  std::string clients_file;            ///< `name token` lines: a token per client
  std::vector<std::string> campaigns;  ///< locks this instance keeps campaigning for
  std::vector<std::string> locks;      ///< extra locks shown by GET /v1/locks and the page
  std::string node_id;                 ///< default: <host>:<pid>
  std::string history;                 ///< optional history sink URI (jsonl:, sqlite:, ...)
  std::string campaign_ttl = "15s";
  std::string ready_timeout = "2s";
  std::string max_wait = "60s";
  std::string max_ttl = "10m";  ///< longest ttl an API client may ask (a lease outlives its client)
  int threads = 8;
  bool verbose = false;
};

/// Adds the `serve` subcommand to `app`, filling `options` when parsed.
CLI::App* add_serve_command(CLI::App& app, ServeOptions& options);

/// Where the sidecar listens (port 0: any free port).
struct ListenAddress {
  std::string host;
  int port = 0;
};

/// The checked --listen address and the bearer token every API request must send ("" for none).
struct ListenSettings {
  ListenAddress address;
  std::string token;
  std::vector<std::pair<std::string, std::string>> clients;  ///< (name, token) of --clients-file
};

/// --listen, --allow-remote, --token-file and --clients-file checked against each other: a
/// non-loopback address needs --allow-remote, which needs a token of at least 16 characters in
/// --token-file or a --clients-file (`name token` lines, names and tokens unique).
ListenSettings listen_settings(const ServeOptions& options);

/// The duration `text` of option `flag`.
Duration duration_option(const std::string& text, const char* flag);

}  // namespace leader::cli
