#pragma once
/// @file connection_pool.hpp
/// A small bounded pool of blocking connections for store implementations. Thread-safe. Broken
/// connections are dropped and replaced on demand, which is how a store reconnects after a
/// server restart.
///
/// `Conn` must provide `bool broken() const` (the last call failed at the transport level) and
/// `bool idle_and_alive()` (cheap check that an idle connection was not closed by the server).

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "leader/errors.hpp"
#include "leader/time.hpp"

namespace leader::detail {

template <class Conn>
class ConnectionPool {
 public:
  /// Opens and prepares one new connection before `deadline` (throws BackendError).
  using Open = std::function<std::unique_ptr<Conn>(Deadline)>;

  /// A pool of at most `max_size` connections; `scheme` names the store in errors.
  ConnectionPool(std::string scheme, int max_size, Open open)
      : scheme_(std::move(scheme)), max_size_(max_size), open_conn_(std::move(open)) {}

  /// A borrowed connection; returned (or dropped if broken) on destruction.
  class Handle {
   public:
    Handle(ConnectionPool* pool, std::unique_ptr<Conn> conn)
        : pool_(pool), conn_(std::move(conn)) {}
    Handle(Handle&&) noexcept = default;
    Handle& operator=(Handle&&) = delete;
    ~Handle() {
      if (conn_) pool_->give_back(std::move(conn_));
    }
    /// The borrowed connection.
    Conn* operator->() const { return conn_.get(); }
    /// The borrowed connection.
    Conn& operator*() const { return *conn_; }

   private:
    ConnectionPool* pool_;
    std::unique_ptr<Conn> conn_;
  };

  /// The connection for the next chunk of a batch sent on one borrowed connection (a SQL
  /// store's renew_batch): `conn` is kept while it works and replaced when broken. False when the
  /// chunk cannot be sent: `fail(error)` was told (the deadline had passed, or no connection
  /// could be had after an earlier chunk went out); before anything was `sent` the error is
  /// thrown instead, as a single call would throw it.
  template <class Fail>
  bool connection_for_chunk(std::optional<Handle>& conn, Deadline deadline, bool sent,
                            Fail&& fail) {
    if (deadline.expired()) {
      fail(BackendError(ErrorCode::deadline_exceeded, scheme_,
                        "renew_batch: deadline passed before this lease was sent"));
      return false;
    }
    try {
      if (!conn || (*conn)->broken()) {
        conn.reset();  // a broken one goes back to the pool, which drops it
        conn.emplace(acquire(deadline));
      }
    } catch (const BackendError& e) {
      if (!sent) throw;  // nothing sent yet: as renew() would throw
      fail(e);
      return false;
    }
    return true;
  }

  /// Borrows an idle live connection or opens a new one; waits for a free one until `deadline`.
  Handle acquire(Deadline deadline) {
    std::unique_lock lock(mu_);
    for (;;) {
      while (!idle_.empty()) {
        auto conn = std::move(idle_.back());
        idle_.pop_back();
        if (conn->idle_and_alive()) return Handle(this, std::move(conn));
        --open_;  // the server closed it (restart, idle timeout): drop and look further
      }
      if (open_ < max_size_) break;
      if (cv_.wait_until(lock, deadline.at()) == std::cv_status::timeout && idle_.empty() &&
          open_ >= max_size_)
        throw BackendError(ErrorCode::deadline_exceeded, scheme_,
                           "no free connection in the pool before the deadline");
    }
    ++open_;
    lock.unlock();
    try {
      return Handle(this, open_conn_(deadline));
    } catch (...) {
      lock.lock();
      --open_;
      cv_.notify_one();
      throw;
    }
  }

 private:
  void give_back(std::unique_ptr<Conn> conn) {
    std::lock_guard lock(mu_);
    if (conn->broken()) {
      --open_;
    } else {
      idle_.push_back(std::move(conn));
    }
    cv_.notify_one();
  }

  const std::string scheme_;
  const int max_size_;
  const Open open_conn_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Conn>> idle_;
  int open_ = 0;  // idle + borrowed + being opened
};

}  // namespace leader::detail
