#pragma once
/// @file serve_command.hpp
/// `leader serve`: an HTTP sidecar on loopback (by default) that lets programs in any language use
/// leadership: health and readiness probes, a JSON API for leases the sidecar holds on their
/// behalf, campaign mode (the Kubernetes leader-elector sidecar pattern) and a status page.
/// docs/serve.md describes the API.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "leader/time.hpp"

namespace leader::cli {

/// Options of `leader serve`, as given on the command line.
struct ServeOptions {
  std::string store;
  std::string listen = "127.0.0.1:9464";
  bool allow_remote = false;           ///< required to listen on a non-loopback address
  std::string token_file;              ///< bearer token; required with allow_remote
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

/// Runs the sidecar until SIGTERM/SIGINT; returns the exit code (0 when stopped by a signal).
/// Throws UsageError for bad options, StoreUnavailable when the store cannot be opened.
int serve(const ServeOptions& options);

}  // namespace leader::cli
