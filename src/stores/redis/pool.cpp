#include "pool.hpp"

#include "leader/errors.hpp"

namespace leader::detail::redis {

ConnectionPool::ConnectionPool(Config config) : config_(std::move(config)) {
  if (config_.transport == Transport::tls) tls_ = std::make_unique<TlsContext>(config_);
}

ConnectionPool::~ConnectionPool() = default;

int ConnectionPool::open_connections() const {
  std::lock_guard lock(mu_);
  return open_;
}

std::unique_ptr<Connection> ConnectionPool::checkout(Deadline deadline) {
  std::unique_lock lock(mu_);
  for (;;) {
    while (!idle_.empty()) {
      auto c = std::move(idle_.back());  // most recently used first: it is the warmest
      idle_.pop_back();
      if (!c->closed_while_idle()) return c;
      --open_;  // the server closed it (restart, timeout): drop it and look again
    }
    if (open_ < config_.pool_size) break;
    if (cv_.wait_until(lock, deadline.at()) == std::cv_status::timeout && idle_.empty() &&
        open_ >= config_.pool_size)
      throw BackendError(ErrorCode::deadline_exceeded, "redis",
                         "all " + std::to_string(config_.pool_size) + " connections to redis at " +
                             config_.endpoint() +
                             " stayed busy until the deadline (raise ?pool_size=)");
  }
  ++open_;
  lock.unlock();
  try {
    auto connect_by = deadline.min(Deadline::after(config_.connect_timeout));
    return Connection::open(config_, tls_.get(), connect_by);
  } catch (...) {
    discard();
    throw;
  }
}

void ConnectionPool::checkin(std::unique_ptr<Connection> c) {
  c->mark_reused();
  {
    std::lock_guard lock(mu_);
    idle_.push_back(std::move(c));
  }
  cv_.notify_one();
}

void ConnectionPool::discard() {
  {
    std::lock_guard lock(mu_);
    --open_;
  }
  cv_.notify_one();
}

void ConnectionPool::run(Deadline deadline, const std::function<void(Connection&, Deadline)>& use) {
  if (deadline.expired())
    throw BackendError(
        ErrorCode::deadline_exceeded, "redis",
        "the deadline passed before the call to redis at " + config_.endpoint() + " started");
  deadline = deadline.min(Deadline::after(config_.command_timeout));
  for (int attempt = 0;; ++attempt) {
    auto c = checkout(deadline);
    bool reused = c->reused();
    try {
      use(*c, deadline);
    } catch (const BackendError& e) {
      c.reset();
      discard();
      if (e.code() == ErrorCode::unavailable && reused && attempt == 0 && !deadline.expired())
        continue;  // a stale connection from before a server restart: one fresh try
      throw;
    } catch (...) {
      c.reset();
      discard();
      throw;
    }
    checkin(std::move(c));
    return;
  }
}

}  // namespace leader::detail::redis
