#pragma once
// Redis Sentinel support of the store (README.md, section Sentinel): which server is the primary
// of a monitored master, asked of the Sentinels, and whether a server says it is a primary.

#include <mutex>
#include <optional>
#include <string>

#include "config.hpp"
#include "connection.hpp"
#include "leader/time.hpp"

namespace leader::detail::redis {

/// The primary of `config.master_name` as the first Sentinel that answers names it
/// (`SENTINEL GET-MASTER-ADDR-BY-NAME`), trying `config.sentinels` in order. Throws
/// BackendError: unavailable when no Sentinel answers, failed_precondition when every one that
/// answers does not know the name.
Endpoint ask_sentinels(const Config& config, Deadline deadline);

/// Throws BackendError(unavailable) unless the server of `c` answers `ROLE` with `master` (a
/// Sentinel can name a primary that was just demoted, or one it has not yet seen promoted).
void verify_primary(Connection& c, Deadline deadline);

}  // namespace leader::detail::redis
