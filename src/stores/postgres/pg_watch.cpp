// PostgresStore::watch: LISTEN on the tables' channel, read, wait for a NOTIFY naming the lock
// (README.md "Watching").
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

#include "leader/detail/watch_reads.hpp"
#include "leader/lock_watching.hpp"
#include "leader/names.hpp"
#include "pg_rows.hpp"
#include "pg_statements.hpp"
#include "postgres_store.hpp"

namespace leader::postgres {
namespace {

using std::chrono::milliseconds;

// How long after a holder's expiry (as the read reported it) the watch reads again.
constexpr Duration kAfterExpiry = milliseconds(5);

// An eventfd that becomes readable when `stop` is requested, for poll() beside the socket.
class StopSignal {
 public:
  explicit StopSignal(const std::stop_token& stop)
      : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)), on_stop_(stop, Signal{fd_}) {
    if (fd_ < 0) throw BackendError(ErrorCode::internal, kScheme, "eventfd failed");
  }
  ~StopSignal() {
    if (fd_ >= 0) ::close(fd_);
  }
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;
  [[nodiscard]] int fd() const { return fd_; }

 private:
  struct Signal {
    int fd;
    void operator()() const noexcept {
      if (fd < 0) return;
      const std::uint64_t one = 1;
      (void)!::write(fd, &one, sizeof one);
    }
  };
  int fd_;
  std::stop_callback<Signal> on_stop_;  // after fd_: unregistered before the fd is closed
};

enum class Wake { notified, timeout, stopped, lost };

}  // namespace

// One watch() call: its listening connection and the lock's reads on it.
class Watch {
 public:
  Watch(PostgresStore& store, std::string lock) : store_(store), lock_(std::move(lock)) {}
  ~Watch() {
    try {
      if (conn_) store_.keep_listener(std::move(conn_));
    } catch (...) {  // the connection is dropped; nothing else to undo
    }
  }
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  // LISTEN (committed), then the read, in one round trip, on an idle listener or a new one; a
  // kept listener that turns out dead is replaced once.
  LockState start(Deadline deadline) {
    conn_ = store_.idle_listener();
    if (conn_) {
      try {
        return listen_and_read(deadline);
      } catch (const BackendError&) {
        if (!conn_->broken()) throw;
      }
    }
    return restart(deadline);
  }

  // A new listening connection (the old one was lost): LISTEN and read again, so that a change
  // made while nobody listened is seen. A new connection that could not be opened or was lost
  // before its LISTEN and read were done (terminated by the server, as pg_terminate_backend
  // does) is tried once more, as a kept listener found dead is in start(): a watch survives one
  // lost connection wherever it happens; a second failure in a row, or an SQL error on a live
  // connection, is the caller's backend error.
  LockState restart(Deadline deadline) {
    for (int attempt = 0;; ++attempt) {
      conn_.reset();
      try {
        conn_ = store_.open_listener(detail::watch_read_deadline(deadline));
        return listen_and_read(deadline);
      } catch (const BackendError&) {
        if (attempt > 0 || deadline.expired() || (conn_ && !conn_->broken())) throw;
      }
    }
  }

  LockState read(Deadline deadline) {
    (void)conn_->take_notifications(channel());  // all of them committed before this read
    auto results = conn_->run({{kInspect, {lock_}}}, detail::watch_read_deadline(deadline));
    return state_of(results[0].get());
  }

  // Waits for a notification naming the lock, for `until`, or for the stop signal.
  Wake wait(Deadline until, const StopSignal& stop) {
    for (;;) {
      try {
        const auto payloads = conn_->take_notifications(channel());
        if (std::find(payloads.begin(), payloads.end(), lock_) != payloads.end())
          return Wake::notified;
      } catch (const BackendError&) {
        if (conn_->broken()) return Wake::lost;
        throw;
      }
      if (until.expired()) return Wake::timeout;
      pollfd fds[2] = {{conn_->socket(), POLLIN, 0}, {stop.fd(), POLLIN, 0}};
      const int ms = static_cast<int>(until.remaining().count()) + 1;
      const int n = ::poll(fds, 2, ms);
      if (n < 0 && errno != EINTR)
        throw BackendError(ErrorCode::internal, kScheme, "poll failed while watching");
      if (n > 0 && fds[1].revents != 0) return Wake::stopped;
    }
  }

  void drop() { conn_.reset(); }

 private:
  [[nodiscard]] const std::string& channel() const { return store_.config_.tables.channel; }

  LockState listen_and_read(Deadline deadline) {
    (void)conn_->take_notifications(channel());
    // Two transactions: notifications are delivered from the LISTEN's commit on, so the read
    // must start after it (PostgreSQL's documented rule for LISTEN), not in the same one.
    auto results =
        conn_->run_each({{{"LISTEN \"" + channel() + "\"", {}, false}}, {{kInspect, {lock_}}}},
                        detail::watch_read_deadline(deadline));
    return state_of(results[1][0].get());
  }

  LockState state_of(PGresult* r) const { return LockState{lock_, decode_holders(r)}; }

  PostgresStore& store_;
  const std::string lock_;
  std::unique_ptr<Connection> conn_;
};

std::unique_ptr<Connection> PostgresStore::open_listener(Deadline deadline) {
  auto conn = Connection::open(config_.conninfo, deadline);
  set_up(*conn, deadline);
  return conn;
}

std::unique_ptr<Connection> PostgresStore::idle_listener() {
  std::lock_guard lock(listeners_mu_);
  while (!listeners_.empty()) {
    auto conn = std::move(listeners_.back());
    listeners_.pop_back();
    if (conn->idle_and_alive()) return conn;
  }
  return nullptr;
}

void PostgresStore::keep_listener(std::unique_ptr<Connection> conn) {
  if (conn->broken()) return;
  try {
    // A kept connection must not listen: nobody would read what the server sends it, and a
    // listener that reads nothing holds back the server's notification queue for everyone.
    conn->run({{"UNLISTEN *", {}, false}}, Deadline::after(detail::kWatchLeastReadTime));
  } catch (const BackendError&) {
    return;
  }
  std::lock_guard lock(listeners_mu_);
  if (listeners_.size() < static_cast<std::size_t>(config_.pool_size))
    listeners_.push_back(std::move(conn));
}

LockState PostgresStore::watch(std::string_view lock, const LockState& last_seen, Deadline deadline,
                               const std::stop_token& stop) {
  validate_lock_name(lock);
  const StopSignal stop_signal(stop);
  Watch w(*this, std::string(lock));
  LockState now = w.start(deadline);
  while (same_holders(now, last_seen) && !stop.stop_requested() && !deadline.expired()) {
    // An expiry changes no row and notifies nothing: read again just after the earliest one.
    Deadline until = deadline;
    for (const Holder& h : now.holders)
      until = until.min(Deadline::after(std::max(h.expires_in, Duration{0}) + kAfterExpiry));
    switch (w.wait(until, stop_signal)) {
      case Wake::notified:
        now = w.read(deadline);
        break;
      case Wake::timeout:
        if (!deadline.expired()) now = w.read(deadline);
        break;
      case Wake::lost:
        now = w.restart(deadline);
        break;
      case Wake::stopped:
        w.drop();  // no UNLISTEN round trip on the way out of a stop
        return now;
    }
  }
  if (stop.stop_requested()) w.drop();
  return now;
}

}  // namespace leader::postgres
