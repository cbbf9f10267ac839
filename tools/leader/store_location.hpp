#pragma once
/// @file store_location.hpp
/// Which store `leader` uses: --store, else $LEADER_STORE, else a per-host SQLite file.

#include <string>

namespace leader::cli {

/// The store URI chosen and where the choice came from.
struct StoreChoice {
  std::string uri;
  std::string source;  ///< "--store", "$LEADER_STORE" or "default"
};

/// The host-wide directory used when it is writable (created when its parent allows it).
inline constexpr const char* kSystemStateDir = "/var/lib/leader";

/// Picks the store: `flag` when non-empty, else $LEADER_STORE, else default_sqlite_path().
/// Throws StoreUnavailable when no default location can be created.
StoreChoice choose_store(const std::string& flag);

/// /var/lib/leader/leader.db when that directory is (or can be made) writable, else
/// $XDG_STATE_HOME/leader/leader.db, else ~/.local/state/leader/leader.db. Creates the directory.
std::string default_sqlite_path();

/// "sqlite://" + the path, with characters that are special in URIs percent-encoded.
std::string sqlite_uri(const std::string& path);

}  // namespace leader::cli
