#pragma once
/// @file probe_command.hpp
/// `leader probe`: asks a local `leader serve` whether it is alive (/healthz) or ready (/readyz),
/// for exec probes (Kubernetes, systemd, Docker HEALTHCHECK) that cannot reach a loopback-only
/// sidecar over HTTP themselves.

#include "subcommand.hpp"

namespace leader::cli {

/// Registers `leader probe` on `app`.
Subcommand add_probe_command(CLI::App& app);

}  // namespace leader::cli
