#pragma once
/// @file mysql_store.hpp
/// The MariaDB / MySQL LeaseStore (schemes `mysql://`, `mariadb://`). See README.md for the data
/// model, fencing source, atomicity and failure modes. Internal to leader::mysql: users open it
/// with leader::open(uri).

#include <span>
#include <vector>

#include "leader/detail/connection_pool.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/lock_listing.hpp"
#include "leader/store.hpp"
#include "leader/uri.hpp"
#include "my_connection.hpp"
#include "my_schema.hpp"

namespace leader::mysql {

/// The store's settings, taken from the URI.
struct Config {
  ConnectOptions connect;
  Tables tables;
  bool create_schema = true;
  int pool_size = 4;
  Duration connect_timeout{10'000};  ///< caps connection set-up below the call's deadline

  /// Parses and validates the URI; throws InvalidArgument naming the bad value.
  static Config from_uri(const Uri& uri);
};

/// The former spellings.
using StoreOptions [[deprecated("use leader::mysql::Config")]] = Config;
[[deprecated("use leader::mysql::Config::from_uri")]] inline Config parse_options(const Uri& uri) {
  return Config::from_uri(uri);
}

/// A LeaseStore on MariaDB (10.3+) or MySQL (8.0.29+). Thread-safe: calls borrow connections
/// from a small pool.
class MysqlStore final : public LeaseStore, public LockLister {
 public:
  /// Keeps the options; connects lazily on the first call.
  explicit MysqlStore(Config config);

  [[nodiscard]] std::string_view scheme() const override { return "mysql"; }

  [[nodiscard]] Capabilities capabilities() noexcept override { return {.listing = this}; }
  LEADER_LEASE_STORE_OPERATIONS;  // the LeaseStore operations, store_support.hpp
  /// kRenewBatch (one compound statement: renew()'s UPDATE per lease in one transaction, one
  /// round trip) per chunk of at most kBatchChunk leases, the chunks one after another on one
  /// pooled connection. A chunk whose round trip fails gets that error for each of its leases
  /// (unknown outcome). Where the server refused to prepare kRenewBatch (MySQL, MariaDB < 10.6)
  /// the default: one renew() per lease. README.md, "Batched renewals".
  [[nodiscard]] std::vector<BatchRenewal> renew_batch(std::span<const RenewalRequest> requests,
                                                      Deadline deadline) override;
  /// Most leases one renew_batch statement carries.
  static constexpr std::size_t kBatchChunk = 1000;
  [[nodiscard]] std::vector<LockState> list_locks(std::string_view prefix,
                                                  Deadline deadline) override;

 private:
  Rows run(const char* statement, const std::vector<Param>& params, Deadline deadline);
  void set_up(Connection& conn, Deadline deadline);

  Config config_;
  detail::ConnectionPool<Connection> pool_;
};

}  // namespace leader::mysql

/// The store's former namespace.
namespace leader::detail {
namespace my = ::leader::mysql;
}  // namespace leader::detail
