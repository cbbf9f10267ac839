#pragma once
// A small pool of connections shared by every thread that uses one client (user threads, the
// electors and the renewal scheduler). A caller takes an idle connection (or opens one, up to
// `pool` in the URI), uses it alone, and gives it back; a connection that failed is closed, so
// the next call reconnects (this is how a store survives a server restart).

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "connection.hpp"

namespace leader::redis {

/// The connection pool of one server. Thread-safe.
class ConnectionPool {
 public:
  /// A pool for `config`; opens nothing until the first call.
  explicit ConnectionPool(ClientConfig config);
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  /// Runs `use` on a connection before `deadline` (shortened to the command timeout, and passed
  /// to `use`). When a connection that served earlier calls
  /// fails with `unavailable` (the server restarted and closed it), `use` runs once more on a
  /// new connection; so `use` must be idempotent. Throws BackendError.
  void run(Deadline deadline, const std::function<void(Connection&, Deadline)>& use);
  /// Connections currently open (idle or in use).
  [[nodiscard]] int open_connections() const;
  /// The settings this pool connects with.
  [[nodiscard]] const ClientConfig& config() const { return config_; }
  /// A new connection outside the pool (a watch's subscriber): to the configured server, or in
  /// Sentinel mode to the current primary (asked of the Sentinels when unknown, ROLE checked).
  [[nodiscard]] std::unique_ptr<Connection> open_connection(Deadline deadline);
  /// Sentinel mode: forgets the primary and closes the idle connections to it, so the next
  /// call asks the Sentinels again (after an I/O error, a timeout or READONLY). No-op otherwise.
  void forget_primary();
  /// Sentinel mode, the one schedule every call of the client follows (run() and the AsyncLane's
  /// attempts): when the Sentinels were last asked `sentinel_check` ago or more, asks them again
  /// before the call goes out, and moves to the primary they name when it changed (the old
  /// primary keeps accepting writes after a manual failover, the store's README.md, "Sentinel").
  /// One caller asks at a time; a caller arriving meanwhile waits for that answer (until
  /// `deadline`: BackendError(deadline_exceeded), nothing was sent). When no Sentinel answers, the
  /// known primary stays in use. No-op otherwise, or with `sentinel_check` 0.
  void recheck_primary(Deadline deadline);
  /// Sentinel mode: bumped by each forget_primary(); a connection opened for an older one
  /// (Connection::generation()) talks to a server that may no longer be the primary.
  [[nodiscard]] std::uint64_t generation() const;

 private:
  std::unique_ptr<Connection> checkout(Deadline deadline);
  /// Asks the Sentinels (in sentinels_' order) for the primary; the one that answered is asked
  /// first next time (a frozen or dead Sentinel then costs its bound once, not at every check).
  Endpoint discover(Deadline deadline);
  /// forget_primary(), then `next` is the primary (what the Sentinels just named).
  void move_primary(const Endpoint& next);
  void checkin(std::unique_ptr<Connection> c);
  void discard();

  ClientConfig config_;
  TlsContext tls_;  // null without TLS
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Connection>> idle_;
  int open_ = 0;
  std::optional<Endpoint> primary_;  // Sentinel mode: the primary last found, if still trusted
  std::uint64_t generation_ = 0;     // bumped by forget_primary()
  std::chrono::steady_clock::time_point checked_at_{};  // Sentinel mode: last ask or recheck
  bool checking_ = false;                               // a recheck is under way
  std::uint64_t checks_ = 0;                            // rechecks finished
  std::condition_variable checked_;                     // a recheck finished
  std::vector<Endpoint> sentinels_;  // the Sentinels, the last one that answered first
};

}  // namespace leader::redis
