#pragma once
/// @file store_location.hpp
/// Which store `leader` uses: --store, else $LEADER_STORE, else a per-host SQLite file.

#include <memory>
#include <string>

#include "leader/store.hpp"
#include "log.hpp"

namespace leader::cli {

/// The store URI chosen and where the choice came from.
struct StoreChoice {
  std::string uri;
  std::string source;  ///< "--store", "$LEADER_STORE" or "default"
};

/// Makes `choice` the URI that messages name (redacted) and says which store is used: the
/// per-host default always (a typo in $LEADER_STORE's name would else go unseen), others with -v.
/// Returns the redacted URI; throws InvalidArgument when the URI does not parse.
std::string announce_store(const StoreChoice& choice, const Log& log);

/// Chooses the store of `flag` (choose_store), announces it (announce_store) and opens it. When
/// `shown` is given, it receives the store's URI as messages name it (redacted) as soon as that is
/// known, also when opening fails. Throws UsageError (choose_store), or StoreFailure "cannot open
/// store URI: why" with the exit code of its cause (69, 77, 78).
std::shared_ptr<LeaseStore> open_store(const std::string& flag, const Log& log,
                                       std::string* shown = nullptr);

/// The host-wide directory used when it is writable (created when its parent allows it).
inline constexpr const char* kSystemStateDir = "/var/lib/leader";

/// Why `uri`, named by `source` (e.g. "--store"), cannot be the CLI's store, or "" when it can:
/// an empty URI, or the in-process memory store (each replica would hold its own lock).
std::string store_uri_problem(const std::string& uri, const std::string& source);

/// Picks the store: `flag` when non-empty, else $LEADER_STORE, else default_sqlite_path().
/// Throws UsageError for an empty or memory: $LEADER_STORE (or flag), StoreUnavailable when no
/// default location can be created.
StoreChoice choose_store(const std::string& flag);

/// /var/lib/leader/leader.db when that directory is (or can be made) writable, else
/// $XDG_STATE_HOME/leader/leader.db, else ~/.local/state/leader/leader.db. Creates the directory.
std::string default_sqlite_path();

/// "sqlite://" + the path, with characters that are special in URIs percent-encoded.
std::string sqlite_uri(const std::string& path);

}  // namespace leader::cli
