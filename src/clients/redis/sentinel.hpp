#pragma once
// Redis Sentinel support of the client (the store's README.md, section Sentinel): which server is
// the primary of a monitored master, asked of the Sentinels, and whether a server says it is a
// primary.

#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "config.hpp"
#include "connection.hpp"
#include "leader/time.hpp"

namespace leader::redis {

/// What ask_sentinels found: the primary, and which of the Sentinels asked named it.
struct SentinelAnswer {
  Endpoint primary;
  std::size_t answered = 0;  ///< its index in the `sentinels` asked
};

/// The primary of `config.master_name` as the first Sentinel of `sentinels` that answers names it
/// (`SENTINEL GET-MASTER-ADDR-BY-NAME`), asked in that order. Each Sentinel has a bound of its
/// own, `config.connect_timeout` for connecting and its reply, and all of them `deadline`: a
/// frozen or unreachable Sentinel costs at most one bound, then the next one is asked. Throws
/// BackendError: unavailable when no Sentinel answers, failed_precondition when every one that
/// answers does not know the name.
SentinelAnswer ask_sentinels(const ClientConfig& config, std::span<const Endpoint> sentinels,
                             Deadline deadline);

/// Throws BackendError(unavailable) unless the server of `c` answers `ROLE` with `master` (a
/// Sentinel can name a primary that was just demoted, or one it has not yet seen promoted).
void verify_primary(Connection& c, Deadline deadline);

}  // namespace leader::redis
