#pragma once
/// @file sqlite_store.hpp
/// The embedded SQLite store: leases, fencing counters and candidates in one database file,
/// shared safely by the threads of a process and by processes on one host. Not for network file
/// systems (SQLite's locking needs local POSIX locks).

#include <condition_variable>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "leader/detail/store_support.hpp"
#include "leader/lock_listing.hpp"
#include "leader/store.hpp"
#include "leader/uri.hpp"

namespace leader::sqlite {

/// The store's settings, parsed from a `sqlite:` URI.
struct Config {
  std::string path;                        ///< database file (created when missing)
  Duration busy_timeout = Duration(5000);  ///< longest wait for another connection's lock
  std::string table_prefix = "leader_";    ///< `^[A-Za-z_][A-Za-z0-9_]{0,30}$`
  bool create_schema = true;               ///< create missing tables at start-up

  /// Parses `sqlite:PATH` or `sqlite:///abs/path.db` with `busy_timeout`, `table_prefix` and
  /// `create_schema`; throws InvalidArgument naming the bad value and the rule.
  static Config from_uri(const Uri& uri);
};

/// The former spelling.
using Options [[deprecated("use leader::sqlite::Config")]] = Config;

class Session;

/// LeaseStore over one SQLite connection used by one call at a time.
class SqliteStore final : public LeaseStore, public LockLister {
 public:
  /// Opens the database and prepares the schema; throws BackendError failed_precondition when
  /// the file cannot be opened or created, or the schema is missing with create_schema=false.
  explicit SqliteStore(Config config);
  ~SqliteStore() override;

  [[nodiscard]] std::string_view scheme() const override { return "sqlite"; }

  [[nodiscard]] Capabilities capabilities() noexcept override { return {.listing = this}; }
  LEADER_LEASE_STORE_OPERATIONS;  // the LeaseStore operations, store_support.hpp
  /// renew()'s statement once per lease inside one BEGIN IMMEDIATE ... COMMIT (one commit, so
  /// one sync, for the whole batch), each with the clock read by its own statement. A failure
  /// before the transaction holds the write lock throws; one after it (a statement, the commit)
  /// rolls back and gives every lease that error (unknown outcome). README.md, "Batched
  /// renewals".
  [[nodiscard]] std::vector<BatchRenewal> renew_batch(std::span<const RenewalRequest> requests,
                                                      Deadline deadline) override;
  [[nodiscard]] std::vector<LockState> list_locks(std::string_view prefix,
                                                  Deadline deadline) override;

 private:
  // Runs `fn(Session&)` holding the connection, bounded by `deadline`.
  template <class Fn>
  auto with_session(std::string_view op, Deadline deadline, Fn&& fn);

  // Exclusive use of the session, waited for with a deadline. (Not std::timed_mutex: its
  // try_lock_until uses pthread_mutex_clocklock, which ThreadSanitizer does not understand.)
  class Gate;

  Config config_;
  std::mutex mu_;
  std::condition_variable released_;
  bool in_use_ = false;
  std::unique_ptr<Session> session_;
};

}  // namespace leader::sqlite
