#pragma once
/// @file serve_command.hpp
/// `leader serve`: an HTTP sidecar on loopback (by default) that lets programs in any language use
/// leadership: health and readiness probes, a JSON API for leases the sidecar holds on their
/// behalf, campaign mode (the Kubernetes leader-elector sidecar pattern) and a status page.
/// docs/serve.md describes the API.

#include "serve_options.hpp"

namespace leader::cli {

/// Runs the sidecar until SIGTERM/SIGINT; returns the exit code (0 when stopped by a signal).
/// Throws UsageError for bad options, StoreUnavailable when the store cannot be opened.
int serve(const ServeOptions& options);

}  // namespace leader::cli
