#pragma once
/// @file postgres_store.hpp
/// The PostgreSQL LeaseStore (scheme `postgresql://` / `postgres://`). See README.md for the data
/// model, fencing source, atomicity and failure modes. Internal to leader::postgres: users open
/// it with leader::open(uri).

#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "leader/detail/connection_pool.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/lock_listing.hpp"
#include "leader/lock_watching.hpp"
#include "leader/store.hpp"
#include "leader/uri.hpp"
#include "pg_connection.hpp"
#include "pg_schema.hpp"

namespace leader::postgres {

/// The store's settings, taken from the URI (the rest goes to libpq unchanged).
struct Config {
  std::string conninfo;  ///< the URI without this store's own query parameters
  Tables tables;
  bool create_schema = true;
  int pool_size = 4;
  Duration statement_timeout{10'000};  ///< server-side backstop per statement
  Duration connect_timeout{10'000};    ///< caps connection set-up below the call's deadline

  /// Parses and validates the URI; throws InvalidArgument naming the bad value.
  static Config from_uri(const Uri& uri);
};

/// The former spellings.
using StoreOptions [[deprecated("use leader::postgres::Config")]] = Config;
[[deprecated("use leader::postgres::Config::from_uri")]] inline Config parse_options(
    const Uri& uri) {
  return Config::from_uri(uri);
}

/// A LeaseStore on PostgreSQL. Thread-safe: calls borrow connections from a small pool.
class PostgresStore final : public LeaseStore, public LockLister, public LockWatcher {
 public:
  /// Validates the options; connects lazily on the first call.
  explicit PostgresStore(Config config);

  [[nodiscard]] std::string_view scheme() const override { return "postgresql"; }

  [[nodiscard]] Capabilities capabilities() noexcept override {
    return {.watch = this, .listing = this};
  }
  LEADER_LEASE_STORE_OPERATIONS;  // the LeaseStore operations, store_support.hpp
  /// kRenewBatch (one UPDATE ... FROM unnest(...) RETURNING statement, renew()'s condition and
  /// server time) per chunk of at most kBatchChunk leases, the chunks one after another on one
  /// pooled connection; a lease named twice goes to a later chunk. A chunk whose round trip
  /// fails gets that error for each of its leases (unknown outcome). README.md, "Batched
  /// renewals".
  [[nodiscard]] std::vector<BatchRenewal> renew_batch(std::span<const RenewalRequest> requests,
                                                      Deadline deadline) override;
  /// Most leases one renew_batch statement carries.
  static constexpr std::size_t kBatchChunk = 1000;
  /// Sends of the acquire statement per try_acquire while it answers "retry" (each one means
  /// another acquisition of the lock committed meanwhile); then the attempt counts as contention.
  static constexpr int kAcquireAttempts = 16;
  [[nodiscard]] std::vector<LockState> list_locks(std::string_view prefix,
                                                  Deadline deadline) override;

  /// On a listening connection of its own (kept for the next watch, UNLISTENed, when it ends):
  /// LISTEN on the tables' channel, then (committed first) the lock's read as inspect(); while
  /// its holders equal `last_seen`, waits for a notification naming the lock (a granted
  /// acquisition, a release or a keep committed), for the earliest holder's expiry (which
  /// notifies nothing), for `deadline` or for `stop`, and reads again after each notification or
  /// expiry. A lost listening connection is replaced (LISTEN and read again). Reads get at least
  /// 1 s even when `deadline` is nearer. Implemented in pg_watch.cpp.
  [[nodiscard]] LockState watch(std::string_view lock, const LockState& last_seen,
                                Deadline deadline, const std::stop_token& stop) override;

 private:
  friend class Watch;
  std::vector<Result> run(const std::vector<Call>& calls, Deadline deadline);
  void set_up(Connection& conn, Deadline deadline);
  std::unique_ptr<Connection> open_listener(Deadline deadline);
  std::unique_ptr<Connection> idle_listener();
  void keep_listener(std::unique_ptr<Connection> conn);

  Config config_;
  detail::ConnectionPool<Connection> pool_;
  std::mutex listeners_mu_;
  std::vector<std::unique_ptr<Connection>> listeners_;  // idle, UNLISTENed, at most pool_size
};

}  // namespace leader::postgres

/// The store's former namespace.
namespace leader::detail {
namespace pg = ::leader::postgres;
}  // namespace leader::detail
