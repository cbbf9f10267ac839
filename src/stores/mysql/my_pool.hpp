#pragma once
/// @file pg_pool.hpp
/// A small bounded pool of MariaDB connections. Thread-safe. Broken connections are dropped
/// and replaced on demand, which is how the store reconnects after a server restart.

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "my_connection.hpp"

namespace leader::detail::my {

/// A bounded connection pool.
class Pool {
 public:
  /// Runs once on every new connection (schema check, prepared statements).
  using Setup = std::function<void(Connection&, Deadline)>;

  /// A pool of at most `max_size` connections to `conninfo`.
  Pool(ConnectOptions options, int max_size, Setup setup);

  /// A connection borrowed from the pool; returned (or dropped if broken) on destruction.
  class Handle {
   public:
    Handle(Pool* pool, std::unique_ptr<Connection> conn) : pool_(pool), conn_(std::move(conn)) {}
    Handle(Handle&&) noexcept = default;
    Handle& operator=(Handle&&) = delete;
    ~Handle();
    /// The borrowed connection.
    Connection* operator->() const { return conn_.get(); }

   private:
    Pool* pool_;
    std::unique_ptr<Connection> conn_;
  };

  /// Borrows an idle live connection or opens a new one; waits for a free one until `deadline`.
  Handle acquire(Deadline deadline);

 private:
  void give_back(std::unique_ptr<Connection> conn);

  const ConnectOptions options_;
  const int max_size_;
  const Setup setup_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Connection>> idle_;
  int open_ = 0;  // idle + borrowed + being opened
};

}  // namespace leader::detail::my
